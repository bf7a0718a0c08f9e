"""Put a secret's value into the Secrets Manager the AWS endpoint variables
name (LocalStack's, for make deploy-local), creating the secret if need be.

    python localstack/secret.py NAME      # the value is read from the
                                          # variable ORDERLY_SECRET_VALUE

The value comes from the environment, never the command line, and is never
printed.
"""
import os
import sys

import boto3

name = sys.argv[1]
value = os.environ["ORDERLY_SECRET_VALUE"]
sm = boto3.client(
    "secretsmanager",
    endpoint_url=os.environ.get("AWS_ENDPOINT_URL", "http://127.0.0.1:4566"),
    region_name=os.environ.get("AWS_REGION", "us-east-1"),
    aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", "test"),
    aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "test"),
)
try:
    sm.put_secret_value(SecretId=name, SecretString=value)
except sm.exceptions.ResourceNotFoundException:
    sm.create_secret(Name=name, SecretString=value)
print(f"[localstack] secret {name} set", file=sys.stderr)
