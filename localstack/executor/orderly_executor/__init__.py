"""orderly's LocalStack Lambda runtime executor: functions as host processes."""
