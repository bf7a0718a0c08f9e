"""LocalStack's RuntimeExecutor interface over runtime.Runtime.

LocalStack makes one executor per execution environment: start() must
block until the runtime is ready, invoke() runs one invocation, stop() may
come from another thread at any time (a startup timeout, an update, the
keep-alive expiring). The function's code is the zip LocalStack already
unpacked for the version; its bootstrap must be built for this host.
"""

from __future__ import annotations

import logging

from localstack import config
from localstack.services.lambda_.invocation.executor_endpoint import ShutdownDuringStartup, StatusErrorException
from localstack.services.lambda_.invocation.lambda_models import FunctionVersion, InvocationResult
from localstack.services.lambda_.invocation.runtime_executor import RuntimeExecutor

from orderly_executor.runtime import Invocation, Runtime, StartupError, Stopped

LOG = logging.getLogger(__name__)


def _loopback() -> str:
    host = config.GATEWAY_LISTEN[0].host
    return "127.0.0.1" if host in ("", "0.0.0.0", "::") else host


class HostRuntimeExecutor(RuntimeExecutor):
    def __init__(self, id: str, function_version: FunctionVersion) -> None:
        super().__init__(id, function_version)
        self.runtime: Runtime | None = None

    def start(self, env_vars: dict[str, str]) -> None:
        cfg = self.function_version.config
        self.runtime = Runtime(
            code_dir=str(cfg.code.get_unzipped_code_location()),
            env=env_vars,
            timeout=float(cfg.timeout),
            version=self.function_version.id.qualifier,
            memory_mb=int(cfg.memory_size),
        )
        try:
            self.runtime.start()
        except StartupError as e:
            # LocalStack reports only that the start failed: say why here.
            LOG.warning(
                "function %s did not start: %s; its last output:\n%s",
                self.function_version.qualified_arn,
                e.payload.decode("utf-8", "replace"),
                "".join(list(self.runtime.all_logs)[-20:]),
            )
            raise StatusErrorException(str(e), payload=e.payload) from e
        except Stopped as e:
            raise ShutdownDuringStartup(str(e)) from e

    def stop(self) -> None:
        if self.runtime:
            self.runtime.stop()

    def get_address(self) -> str:
        return "127.0.0.1"

    def get_endpoint_from_executor(self) -> str:
        return _loopback()

    def get_runtime_endpoint(self) -> str:
        # Unused (the Runtime API is served in this process), but LocalStack
        # puts it in the environment.
        return f"http://{_loopback()}:{config.GATEWAY_LISTEN[0].port}/_localstack_lambda/{self.id}"

    def invoke(self, payload: dict[str, str]) -> InvocationResult:
        inv = Invocation(
            request_id=payload["invoke-id"],
            function_arn=payload["invoked-function-arn"],
            payload=(payload.get("payload") or "").encode(),
            trace_id=payload.get("trace-id") or "",
        )
        result = self.runtime.invoke(inv)
        return InvocationResult(inv.request_id, result.payload, is_error=result.is_error, logs=result.logs)

    def get_logs(self) -> str:
        return "".join(self.runtime.all_logs) if self.runtime else ""

    @classmethod
    def prepare_version(cls, function_version: FunctionVersion) -> None:
        code = function_version.config.code
        if not code:
            raise NotImplementedError("the host executor runs zip functions only, not container images")
        code.prepare_for_execution()  # unzips the code once per version

    @classmethod
    def cleanup_version(cls, function_version: FunctionVersion) -> None:
        pass

    @classmethod
    def validate_environment(cls) -> bool:
        return True
