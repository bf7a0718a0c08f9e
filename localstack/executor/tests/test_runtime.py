"""Tests of runtime.Runtime with a fake custom runtime as the bootstrap.

Run: python3 -m unittest discover -s localstack/executor/tests -t localstack/executor
"""

import json
import os
import shutil
import tempfile
import threading
import time
import unittest

from orderly_executor.runtime import Invocation, Runtime, StartupError, Stopped

HERE = os.path.dirname(os.path.abspath(__file__))


def code_dir(test: unittest.TestCase) -> str:
    d = tempfile.mkdtemp(prefix="orderly-executor-")
    test.addCleanup(shutil.rmtree, d)
    shutil.copy(os.path.join(HERE, "fake_bootstrap.py"), os.path.join(d, "bootstrap"))
    os.chmod(os.path.join(d, "bootstrap"), 0o755)
    return d


def runtime(test: unittest.TestCase, timeout: float = 5, init: str = "ok") -> Runtime:
    env = {"FAKE_INIT": init, "LOCALSTACK_RUNTIME_ID": "internal", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": 128,
           "PATH": os.environ["PATH"]}
    rt = Runtime(code_dir(test), env, timeout=timeout)
    test.addCleanup(rt.stop)
    return rt


def invocation(do: str, n: int = 0, **kw) -> Invocation:
    return Invocation(f"req-{do}-{n}", "arn:aws:lambda:us-east-1:000000000000:function:f",
                      json.dumps({"do": do, **kw}).encode(), "Root=1-abc")


class RuntimeTest(unittest.TestCase):
    def test_invocations_reach_one_process_in_turn(self):
        rt = runtime(self)
        rt.start()
        pids = set()
        for n in range(3):
            res = rt.invoke(invocation("echo", n))
            self.assertFalse(res.is_error, res.payload)
            body = json.loads(res.payload)
            self.assertEqual(body["echo"], {"do": "echo"})
            self.assertEqual(body["task_root"], rt.code_dir)
            self.assertGreater(body["deadline_ms"], time.time() * 1000)
            self.assertIn(f"START RequestId: req-echo-{n}", res.logs)
            self.assertIn(f"handling req-echo-{n}", res.logs)
            self.assertIn(f"REPORT RequestId: req-echo-{n}", res.logs)
            pids.add(body["pid"])
        self.assertEqual(len(pids), 1, "one warm process serves every invocation")

    def test_a_chunked_response_is_read_whole(self):
        rt = runtime(self)
        rt.start()
        res = rt.invoke(invocation("chunked"))
        self.assertFalse(res.is_error, res.payload)
        self.assertEqual(json.loads(res.payload)["echo"], {"do": "chunked"})
        self.assertFalse(rt.invoke(invocation("echo", 1)).is_error, "the connection stays usable")

    def test_internal_variables_are_not_passed_on(self):
        rt = runtime(self)
        rt.start()
        res = rt.invoke(invocation("echo"))
        self.assertIn("init no internal variables", res.logs, "the first invocation's logs carry the init output")

    def test_a_function_error_is_an_error_result(self):
        rt = runtime(self)
        rt.start()
        res = rt.invoke(invocation("error"))
        self.assertTrue(res.is_error)
        self.assertEqual(json.loads(res.payload)["errorType"], "Boom")
        self.assertFalse(rt.invoke(invocation("echo", 1)).is_error, "the process serves the next invocation")

    def test_a_timeout_kills_the_process_and_the_next_invocation_starts_a_new_one(self):
        rt = runtime(self, timeout=1)
        rt.start()
        first = json.loads(rt.invoke(invocation("echo", 1)).payload)["pid"]
        began = time.monotonic()
        res = rt.invoke(invocation("sleep", s=30))
        self.assertLess(time.monotonic() - began, 5)
        self.assertTrue(res.is_error)
        self.assertIn("Task timed out after 1.00 seconds", json.loads(res.payload)["errorMessage"])
        with self.assertRaises(ProcessLookupError):
            os.kill(first, 0)
        second = json.loads(rt.invoke(invocation("echo", 2)).payload)["pid"]
        self.assertNotEqual(first, second)

    def test_an_exit_during_an_invocation_is_an_error_and_the_next_one_restarts(self):
        rt = runtime(self)
        rt.start()
        res = rt.invoke(invocation("exit"))
        self.assertTrue(res.is_error)
        self.assertEqual(json.loads(res.payload)["errorType"], "Runtime.ExitError")
        self.assertIn("exit status 3", json.loads(res.payload)["errorMessage"])
        self.assertFalse(rt.invoke(invocation("echo")).is_error)

    def test_start_fails_on_an_init_error_or_an_early_exit(self):
        for init, want in (("error", "Runtime.InitError"), ("exit", "Runtime.ExitError")):
            with self.subTest(init=init):
                rt = runtime(self, init=init)
                with self.assertRaises(StartupError) as cm:
                    rt.start()
                self.assertEqual(json.loads(cm.exception.payload)["errorType"], want)

    def test_stop_wakes_a_waiting_invocation(self):
        rt = runtime(self, timeout=30)
        rt.start()
        threading.Timer(0.5, rt.stop).start()
        with self.assertRaises(Stopped):
            rt.invoke(invocation("sleep", s=30))
        with self.assertRaises(Stopped):
            rt.start()


if __name__ == "__main__":
    unittest.main()
