package config

import (
	"log/slog"
	"os"
)

// Main starts a Lambda function: run reads its settings from env, builds
// it and hands it to lambda.Start, which does not return. An error from
// run is logged as "cannot start" and exits 1, so a function that is
// misconfigured fails its init where the logs show it, never serving.
func Main(function string, run func(log *slog.Logger, env *Env) error) {
	log := Logger(function)
	if err := run(log, FromOS()); err != nil {
		log.Error("cannot start", "error", err)
		os.Exit(1)
	}
}
