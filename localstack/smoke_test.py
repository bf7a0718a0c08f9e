#!/usr/bin/env python3
"""Smoke test for the local emulators started by localstack/emulators.sh.

Run with the project venv (boto3 comes with moto):
    .tools/venv/bin/python localstack/smoke_test.py

Checks DynamoDB Local (table + GSI + stream, records via the dynamodbstreams
API on the same port) and moto (SQS redrive to DLQ, SNS->SQS envelope/raw
delivery, SNS filter policy, EventBridge rule -> SQS). Prints observations and
exits non-zero on the first hard failure.
"""
import json
import os
import sys
import time
import uuid

import boto3
from botocore.config import Config

DDB = f"http://127.0.0.1:{os.environ.get('DYNAMODB_PORT', '8000')}"
MOTO = f"http://127.0.0.1:{os.environ.get('MOTO_PORT', '5000')}"
CFG = Config(retries={"max_attempts": 2}, connect_timeout=3, read_timeout=30)
RUN = uuid.uuid4().hex[:8]


def client(service, endpoint, region="us-east-1", key="test"):
    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name=region,
        aws_access_key_id=key,
        aws_secret_access_key="test",
        config=CFG,
    )


def check(cond, msg):
    print(("  ok   " if cond else "  FAIL ") + msg)
    if not cond:
        sys.exit(1)


def note(msg):
    print("  note " + msg)


def dynamodb():
    print("DynamoDB Local @", DDB)
    ddb = client("dynamodb", DDB)
    streams = client("dynamodbstreams", DDB)
    table = f"smoke-orders-{RUN}"
    t0 = time.time()
    desc = ddb.create_table(
        TableName=table,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "gsi1pk", "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "gsi1",
                "KeySchema": [{"AttributeName": "gsi1pk", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )["TableDescription"]
    note(f"CreateTable status={desc['TableStatus']} in {time.time() - t0:.2f}s")
    stream_arn = desc.get("LatestStreamArn")
    check(bool(stream_arn), f"table has LatestStreamArn {stream_arn}")

    # sharedDb: another region + other credentials see the same table.
    other = client("dynamodb", DDB, region="eu-west-1", key="someoneelse")
    check(table in other.list_tables()["TableNames"], "sharedDb: table visible from eu-west-1 / other key")

    item = {"pk": {"S": "ORDER#1"}, "sk": {"S": "META"}, "gsi1pk": {"S": "CUST#7"}, "status": {"S": "NEW"}}
    ddb.put_item(TableName=table, Item=item)
    ddb.update_item(
        TableName=table,
        Key={"pk": {"S": "ORDER#1"}, "sk": {"S": "META"}},
        UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":s": {"S": "PAID"}},
    )
    q = ddb.query(
        TableName=table,
        IndexName="gsi1",
        KeyConditionExpression="gsi1pk = :c",
        ExpressionAttributeValues={":c": {"S": "CUST#7"}},
    )
    check(q["Count"] == 1 and q["Items"][0]["status"]["S"] == "PAID", "GSI query returns updated item")
    ddb.delete_item(TableName=table, Key={"pk": {"S": "ORDER#1"}, "sk": {"S": "META"}})

    ls = streams.list_streams(TableName=table)["Streams"]
    check(len(ls) == 1 and ls[0]["StreamArn"] == stream_arn, "dynamodbstreams ListStreams finds the stream")
    sd = streams.describe_stream(StreamArn=stream_arn)["StreamDescription"]
    shards = sd["Shards"]
    note(f"DescribeStream status={sd['StreamStatus']} viewType={sd['StreamViewType']} shards={len(shards)}")
    for s in shards:
        note(f"  shard {s['ShardId']} parent={s.get('ParentShardId')} range={s['SequenceNumberRange']}")

    records = []
    for s in shards:
        it = streams.get_shard_iterator(
            StreamArn=stream_arn, ShardId=s["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        for _ in range(5):
            out = streams.get_records(ShardIterator=it, Limit=100)
            records += out["Records"]
            it = out.get("NextShardIterator")
            if not it or not out["Records"]:
                break
        note(f"  after draining shard: NextShardIterator {'present' if it else 'absent'}")
    events = [r["eventName"] for r in records]
    check(events == ["INSERT", "MODIFY", "REMOVE"], f"stream records in order: {events}")
    mod = records[1]["dynamodb"]
    check(
        mod["OldImage"]["status"]["S"] == "NEW" and mod["NewImage"]["status"]["S"] == "PAID",
        "MODIFY record carries OldImage and NewImage",
    )
    r0 = records[0]
    note(
        f"record eventSource={r0['eventSource']} awsRegion={r0.get('awsRegion')} "
        f"seq={r0['dynamodb']['SequenceNumber']} keys={list(r0['dynamodb'].keys())}"
    )

    # A LATEST iterator taken now should only see writes made afterwards.
    it = streams.get_shard_iterator(
        StreamArn=stream_arn, ShardId=shards[-1]["ShardId"], ShardIteratorType="LATEST"
    )["ShardIterator"]
    ddb.put_item(TableName=table, Item={**item, "pk": {"S": "ORDER#2"}})
    out = streams.get_records(ShardIterator=it)
    check([r["eventName"] for r in out["Records"]] == ["INSERT"], "LATEST iterator sees only the new write")
    ddb.delete_table(TableName=table)


def queue_arn(sqs, url):
    return sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]


def receive_one(sqs, url, wait=2, **kw):
    msgs = sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=1, WaitTimeSeconds=wait, AttributeNames=["All"],
        MessageAttributeNames=["All"], **kw
    ).get("Messages", [])
    return msgs[0] if msgs else None


def sqs_redrive():
    print("moto SQS @", MOTO)
    sqs = client("sqs", MOTO)
    dlq = sqs.create_queue(QueueName=f"smoke-dlq-{RUN}")["QueueUrl"]
    q = sqs.create_queue(
        QueueName=f"smoke-q-{RUN}",
        Attributes={
            "VisibilityTimeout": "1",
            "RedrivePolicy": json.dumps({"deadLetterTargetArn": queue_arn(sqs, dlq), "maxReceiveCount": "2"}),
        },
    )["QueueUrl"]
    note(f"queue url format: {q}")
    sqs.send_message(QueueUrl=q, MessageBody="poison")
    for n in (1, 2):
        m = receive_one(sqs, q)
        check(m is not None, f"receive #{n} gets the message (ApproximateReceiveCount={m and m['Attributes']['ApproximateReceiveCount']})")
        time.sleep(1.2)  # let visibility timeout expire; do NOT delete
    m = receive_one(sqs, q, wait=1)
    check(m is None, "receive #3 on source queue gets nothing (moved away)")
    d = receive_one(sqs, dlq)
    check(d is not None and d["Body"] == "poison", "message is in the DLQ after 2 receives without delete")
    note(f"DLQ copy attributes: ReceiveCount={d['Attributes'].get('ApproximateReceiveCount')} "
         f"DeadLetterQueueSourceArn={d['Attributes'].get('DeadLetterQueueSourceArn')}")


def sns_to_sqs():
    print("moto SNS @", MOTO)
    sqs = client("sqs", MOTO)
    sns = client("sns", MOTO)
    topic = sns.create_topic(Name=f"smoke-topic-{RUN}")["TopicArn"]
    q_env = sqs.create_queue(QueueName=f"smoke-sns-env-{RUN}")["QueueUrl"]
    q_raw = sqs.create_queue(QueueName=f"smoke-sns-raw-{RUN}")["QueueUrl"]
    q_flt = sqs.create_queue(QueueName=f"smoke-sns-flt-{RUN}")["QueueUrl"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn(sqs, q_env))
    sub_raw = sns.subscribe(
        TopicArn=topic, Protocol="sqs", Endpoint=queue_arn(sqs, q_raw), ReturnSubscriptionArn=True
    )["SubscriptionArn"]
    sns.set_subscription_attributes(SubscriptionArn=sub_raw, AttributeName="RawMessageDelivery", AttributeValue="true")
    sns.subscribe(
        TopicArn=topic, Protocol="sqs", Endpoint=queue_arn(sqs, q_flt),
        Attributes={"FilterPolicy": json.dumps({"kind": ["paid"]})},
    )
    attrs = {"kind": {"DataType": "String", "StringValue": "created"}}
    sns.publish(TopicArn=topic, Message='{"order":"1"}', Subject="s", MessageAttributes=attrs)

    m = receive_one(sqs, q_env)
    check(m is not None, "default sqs subscription receives the publish")
    env = json.loads(m["Body"])
    check(env.get("Type") == "Notification" and env.get("Message") == '{"order":"1"}',
          f"default delivery wraps body in SNS envelope (keys: {sorted(env)})")
    note(f"envelope MessageAttributes={env.get('MessageAttributes')}; SQS-level attrs={m.get('MessageAttributes')}")

    r = receive_one(sqs, q_raw)
    check(r is not None and r["Body"] == '{"order":"1"}', "RawMessageDelivery=true delivers the bare body")
    note(f"raw delivery SQS MessageAttributes={r.get('MessageAttributes')}")

    check(receive_one(sqs, q_flt, wait=1) is None, "FilterPolicy kind=paid drops kind=created")
    sns.publish(TopicArn=topic, Message="p", MessageAttributes={"kind": {"DataType": "String", "StringValue": "paid"}})
    check(receive_one(sqs, q_flt) is not None, "FilterPolicy kind=paid passes kind=paid")


def eventbridge_to_sqs():
    print("moto EventBridge @", MOTO)
    sqs = client("sqs", MOTO)
    ev = client("events", MOTO)
    bus = f"smoke-bus-{RUN}"
    ev.create_event_bus(Name=bus)
    q = sqs.create_queue(QueueName=f"smoke-ev-{RUN}")["QueueUrl"]
    ev.put_rule(Name="r", EventBusName=bus,
                EventPattern=json.dumps({"source": ["orderly"], "detail-type": ["OrderPaid"]}))
    ev.put_targets(Rule="r", EventBusName=bus, Targets=[{"Id": "q", "Arn": queue_arn(sqs, q)}])
    out = ev.put_events(Entries=[
        {"EventBusName": bus, "Source": "orderly", "DetailType": "OrderPaid", "Detail": '{"id":"1"}'},
        {"EventBusName": bus, "Source": "orderly", "DetailType": "Other", "Detail": "{}"},
    ])
    check(out["FailedEntryCount"] == 0, "PutEvents accepted")
    m = receive_one(sqs, q)
    check(m is not None and json.loads(m["Body"])["detail"] == {"id": "1"}, "matching event delivered to SQS target")
    check(receive_one(sqs, q, wait=1) is None, "non-matching event not delivered")


if __name__ == "__main__":
    dynamodb()
    sqs_redrive()
    sns_to_sqs()
    eventbridge_to_sqs()
    print("ALL OK")
