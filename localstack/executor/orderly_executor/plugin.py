"""Registers the executor with LocalStack (LAMBDA_RUNTIME_EXECUTOR=host)."""

from localstack.services.lambda_.invocation.plugins import RuntimeExecutorPlugin


class HostRuntimeExecutorPlugin(RuntimeExecutorPlugin):
    name = "host"

    def load(self, *args, **kwargs):
        from orderly_executor.executor import HostRuntimeExecutor

        return HostRuntimeExecutor
