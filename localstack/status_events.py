"""Print the order status events the local runtime published.

A rule on the local event bus sends every status event to the queue
orderly-<stage>-status-events (stage "local" under `make run`); this reads
and deletes what is there, one line per event. Run it with `make events`.
"""
import json
import os
import sys

import boto3

stage = sys.argv[1] if len(sys.argv) > 1 else "local"
# The status queue is where the event bus delivers: moto, beside EventBridge
# (AWS_ENDPOINT_URL), not ElasticMQ (AWS_ENDPOINT_URL_SQS).
sqs = boto3.client(
    "sqs",
    endpoint_url=os.environ.get("AWS_ENDPOINT_URL", "http://127.0.0.1:5000"),
    region_name=os.environ.get("AWS_REGION", "us-east-1"),
    aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", "test"),
    aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "test"),
)
url = sqs.get_queue_url(QueueName=f"orderly-{stage}-status-events")["QueueUrl"]
while True:
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", [])
    if not got:
        break
    for m in got:
        event = json.loads(m["Body"])
        d = event.get("detail", {})
        print(event.get("time", ""), event.get("detail-type", ""), d.get("orderId", ""),
              d.get("failedStep", ""), d.get("reason", ""), sep="\t")
        sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
