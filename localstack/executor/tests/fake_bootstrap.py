#!/usr/bin/env python3
"""A custom runtime for the tests: a Lambda Runtime API client whose
behaviour each event chooses ({"do": "echo" | "error" | "sleep" | "exit"}),
and whose start FAKE_INIT chooses ("ok", "error", "exit")."""
import http.client
import json
import os
import sys
import time
import urllib.request

api = "http://" + os.environ["AWS_LAMBDA_RUNTIME_API"] + "/2018-06-01/runtime"


def post(path, body, chunked=False):
    data = json.dumps(body).encode()
    if chunked:  # as aws-lambda-go streams a response
        host, port = os.environ["AWS_LAMBDA_RUNTIME_API"].split(":")
        conn = http.client.HTTPConnection(host, int(port))
        conn.request("POST", "/2018-06-01/runtime" + path, body=iter([data[:5], data[5:]]), encode_chunked=True,
                     headers={"Transfer-Encoding": "chunked"})
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 202, resp.status
        return
    req = urllib.request.Request(api + path, data=data, method="POST")
    with urllib.request.urlopen(req) as resp:
        assert resp.status == 202, resp.status


init = os.environ.get("FAKE_INIT", "ok")
print("init", os.environ.get("LOCALSTACK_RUNTIME_ID", "no internal variables"), flush=True)
if init == "error":
    post("/init/error", {"errorType": "Runtime.InitError", "errorMessage": "bad config"})
    sys.exit(1)
if init == "exit":
    sys.exit(2)

while True:
    with urllib.request.urlopen(api + "/invocation/next") as resp:
        rid = resp.headers["Lambda-Runtime-Aws-Request-Id"]
        deadline = int(resp.headers["Lambda-Runtime-Deadline-Ms"])
        event = json.loads(resp.read())
    print("handling", rid, flush=True)
    do = event.get("do")
    if do == "echo":
        post(f"/invocation/{rid}/response", {"echo": event, "pid": os.getpid(), "deadline_ms": deadline,
                                              "task_root": os.environ.get("LAMBDA_TASK_ROOT")})
    elif do == "chunked":
        post(f"/invocation/{rid}/response", {"echo": event, "pid": os.getpid()}, chunked=True)
    elif do == "error":
        post(f"/invocation/{rid}/error", {"errorType": "Boom", "errorMessage": "it failed"})
    elif do == "sleep":
        time.sleep(event["s"])
        post(f"/invocation/{rid}/response", {"slept": True})
    elif do == "exit":
        sys.exit(3)
