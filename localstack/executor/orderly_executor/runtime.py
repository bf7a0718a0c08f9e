"""A Lambda execution environment as a host process.

Runtime starts a function's ``bootstrap`` (a custom runtime, such as an
aws-lambda-go binary) as a child process and serves it the Lambda Runtime
API on a loopback port of its own: the part of Lambda's runtime interface
a custom runtime talks to.

    GET  /2018-06-01/runtime/invocation/next
    POST /2018-06-01/runtime/invocation/{request id}/response
    POST /2018-06-01/runtime/invocation/{request id}/error
    POST /2018-06-01/runtime/init/error

Like Lambda it runs one invocation at a time, and it enforces the
function's timeout itself: a process that overruns, or exits, is killed
and the invocation fails; the next invocation starts a fresh process (a
cold start). Each process gets a port and an invocation queue of its own,
so a killed process's half-done request can never take the next one.

This module does not import LocalStack; ``executor.py`` adapts it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections import deque
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from queue import Queue

API = "/2018-06-01/runtime"

# Variables LocalStack passes for its own runtime init, which a function
# must not see (the init removes them too).
INTERNAL_VARIABLES = frozenset(
    {
        "LOCALSTACK_RUNTIME_ENDPOINT",
        "LOCALSTACK_RUNTIME_ID",
        "LOCALSTACK_INTEROP_PORT",
        "LOCALSTACK_RUNTIME_TRACING_PORT",
        "LOCALSTACK_USER",
        "LOCALSTACK_CODE_ARCHIVES",
        "LOCALSTACK_HOT_RELOADING_PATHS",
        "LOCALSTACK_ENABLE_XRAY_TELEMETRY",
        "LOCALSTACK_INIT_LOG_LEVEL",
        "LOCALSTACK_POST_INVOKE_WAIT_MS",
        "LOCALSTACK_FUNCTION_ACCOUNT_ID",
        "LOCALSTACK_MAX_PAYLOAD_SIZE",
        "LOCALSTACK_CHMOD_PATHS",
        "HOSTNAME",
        "HOME",
    }
)

# How long output written just before a response is waited for, so it
# lands in that invocation's logs.
LOG_DRAIN_SECONDS = 0.05


class StartupError(Exception):
    """The runtime failed to start: it exited, or posted an init error."""

    def __init__(self, message: str, payload: bytes):
        super().__init__(message)
        self.payload = payload


class Stopped(Exception):
    """The environment was stopped while it started or ran an invocation."""


@dataclass
class Invocation:
    request_id: str
    function_arn: str
    payload: bytes
    trace_id: str = ""


@dataclass
class Result:
    payload: bytes
    is_error: bool
    logs: str


def error_body(error_type: str, message: str) -> bytes:
    return json.dumps({"errorType": error_type, "errorMessage": message}).encode()


class _Process:
    """One start of the bootstrap: its process, Runtime API server and queue."""

    def __init__(self, runtime: Runtime):
        self.runtime = runtime
        self.ready: Future = Future()
        self.queue: Queue = Queue()
        # The invocation in flight: (request id, Future of (payload, is_error)).
        self.current: tuple[str, Future] | None = None
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self.server.daemon_threads = True
        self.killed = False
        threading.Thread(target=self.server.serve_forever, name="runtime-api", daemon=True).start()
        env = dict(runtime.env)
        env["AWS_LAMBDA_RUNTIME_API"] = f"127.0.0.1:{self.server.server_address[1]}"
        self.proc = subprocess.Popen(
            [os.path.join(runtime.code_dir, "bootstrap")],
            cwd=runtime.code_dir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        threading.Thread(target=self._pump, name="runtime-output", daemon=True).start()
        threading.Thread(target=self._watch, name="runtime-exit", daemon=True).start()

    def _pump(self) -> None:
        with self.proc.stdout:
            for line in iter(self.proc.stdout.readline, b""):
                self.runtime._append_log(line.decode("utf-8", "replace"))

    def _watch(self) -> None:
        code = self.proc.wait()
        if self.killed:
            return
        body = error_body("Runtime.ExitError", f"Runtime exited with error: exit status {code}")
        if not self.ready.done():
            self.ready.set_exception(StartupError("the runtime exited before it asked for an invocation", body))
        with self.lock:
            current = self.current
        if current and not current[1].done():
            current[1].set_result((body, True))

    def complete(self, request_id: str, payload: bytes, is_error: bool) -> bool:
        with self.lock:
            current = self.current
        if current is None or current[0] != request_id or current[1].done():
            return False
        current[1].set_result((payload, is_error))
        return True

    def kill(self) -> None:
        with self.lock:
            if self.killed:
                return
            self.killed = True
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.queue.put(None)  # wakes a /next that waits
        self.server.shutdown()
        self.server.server_close()


def _handler_for(process: _Process):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args):  # noqa: A002 - the base class's name
            pass

        def _answer(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            try:
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the runtime was killed meanwhile

        def _body(self) -> bytes:
            # aws-lambda-go streams a response: chunked, with no length.
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                body = bytearray()
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass  # trailers
                        return bytes(body)
                    body += self.rfile.read(size)
                    self.rfile.readline()  # the CRLF after each chunk
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def do_GET(self):
            if self.path != f"{API}/invocation/next":
                return self._answer(404, error_body("NotFound", self.path))
            if not process.ready.done():
                process.ready.set_result(True)
            inv = process.queue.get()
            if inv is None:  # killed or stopped: nobody is left to answer
                self.close_connection = True
                return
            deadline_ms = int((time.time() + process.runtime.timeout) * 1000)
            headers = {
                "Lambda-Runtime-Aws-Request-Id": inv.request_id,
                "Lambda-Runtime-Deadline-Ms": str(deadline_ms),
                "Lambda-Runtime-Invoked-Function-Arn": inv.function_arn,
            }
            if inv.trace_id:
                headers["Lambda-Runtime-Trace-Id"] = inv.trace_id
            self._answer(200, inv.payload, headers)

        def do_POST(self):
            body = self._body()
            parts = self.path.removeprefix(API + "/").split("/")
            if parts == ["init", "error"]:
                if not process.ready.done():
                    process.ready.set_exception(StartupError("the runtime reported an init error", body))
                return self._answer(202, b'{"status":"OK"}')
            if len(parts) == 3 and parts[0] == "invocation" and parts[2] in ("response", "error"):
                if process.complete(parts[1], body, parts[2] == "error"):
                    return self._answer(202, b'{"status":"OK"}')
                return self._answer(400, error_body("InvalidRequestID", f"no invocation {parts[1]} in flight"))
            self._answer(404, error_body("NotFound", self.path))

    return Handler


class Runtime:
    """A function's execution environment: its bootstrap as a host process.

    ``env`` is the function's environment as Lambda sets it; ``timeout`` is
    the function's timeout in seconds.
    """

    def __init__(self, code_dir: str, env: dict[str, object], timeout: float, version: str = "$LATEST", memory_mb: int = 128):
        self.code_dir = code_dir
        self.timeout = timeout
        self.version = version
        self.memory_mb = memory_mb
        self.env = {k: str(v) for k, v in env.items() if k not in INTERNAL_VARIABLES}
        self.env["LAMBDA_TASK_ROOT"] = code_dir
        self.env.setdefault("PATH", os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"))
        self._process: _Process | None = None
        self._stopped = False
        self._lock = threading.Lock()
        self._logs: list[str] = []
        self._log_lock = threading.Lock()
        # The latest output of every start, for LocalStack's debug output.
        self.all_logs: deque[str] = deque(maxlen=1000)

    def _append_log(self, line: str) -> None:
        with self._log_lock:
            self._logs.append(line)
            self.all_logs.append(line)

    def _take_logs(self) -> str:
        with self._log_lock:
            out, self._logs = "".join(self._logs), []
        return out

    def start(self) -> None:
        """Start the bootstrap and wait until it asks for its first invocation.

        Raises StartupError when it exits or reports an init error first,
        and Stopped when stop() is called meanwhile."""
        with self._lock:
            if self._stopped:
                raise Stopped("the environment was stopped")
            if self._process is not None and (self._process.killed or self._process.proc.poll() is not None):
                self._process.kill()  # it timed out or exited: free its port
                self._process = None
            if self._process is None:
                self._process = _Process(self)
            process = self._process
        try:
            process.ready.result()
        except StartupError:
            process.kill()
            raise
        if self._stopped:
            raise Stopped("the environment was stopped while it started")

    def invoke(self, inv: Invocation) -> Result:
        """Run one invocation and return the function's response or error."""
        with self._lock:
            process = self._process
        if process is None or process.killed or process.proc.poll() is not None:
            self.start()  # a cold start after a timeout or an exit
            with self._lock:
                process = self._process
        began = time.monotonic()
        done: Future = Future()
        with process.lock:
            process.current = (inv.request_id, done)
        process.queue.put(inv)
        try:
            payload, is_error = done.result(timeout=self.timeout)
        except FutureTimeout:
            process.kill()
            payload, is_error = (
                error_body("Sandbox.Timedout", f"{inv.request_id} Task timed out after {self.timeout:.2f} seconds"),
                True,
            )
        if self._stopped:
            raise Stopped("the environment was stopped during the invocation")
        time.sleep(LOG_DRAIN_SECONDS)
        elapsed_ms = (time.monotonic() - began) * 1000
        logs = (
            f"START RequestId: {inv.request_id} Version: {self.version}\n"
            + self._take_logs()
            + f"END RequestId: {inv.request_id}\n"
            + f"REPORT RequestId: {inv.request_id}\tDuration: {elapsed_ms:.2f} ms\t"
            + f"Billed Duration: {int(elapsed_ms) + 1} ms\tMemory Size: {self.memory_mb} MB\t"
            + f"Max Memory Used: {self.memory_mb} MB\t\n"
        )
        return Result(payload, is_error, logs)

    def stop(self) -> None:
        """Kill the process; a start() or invoke() waiting raises Stopped."""
        with self._lock:
            self._stopped = True
            process = self._process
        if process is None:
            return
        with process.lock:
            current = process.current
        process.kill()
        if not process.ready.done():
            process.ready.set_exception(Stopped("the environment was stopped while it started"))
        if current and not current[1].done():
            current[1].set_exception(Stopped("the environment was stopped during the invocation"))
