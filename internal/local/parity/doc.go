// Package parity holds no code, only tests: that the emulators `make run`
// and `make test` use (ElasticMQ for SQS; moto for SNS, EventBridge and the
// queues they deliver to) behave as AWS does in everything orderly relies
// on. A feature an emulator lacks fails here, by name, before it shows as
// a flaky engine test. Each test runs against whatever the SDK's endpoint
// settings name, so the same tests check LocalStack or a real account too.
package parity
