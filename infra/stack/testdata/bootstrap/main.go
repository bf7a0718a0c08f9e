// Command bootstrap stands for a function binary in the stack's tests,
// which read only the build tags Go records in it.
package main

func main() {}
