package faults

// SetKill replaces how a crash ends the process, so a test survives it.
func SetKill(in *Injector, kill func()) { in.kill = kill }
