package main

import (
	"flag"
	"strings"
	"testing"

	"orderly/internal/actor/api"
	"orderly/internal/order"
)

// A command's flags may come before or after its one argument, as README
// writes them (dlq redrive QUEUE -dry-run).
func TestCommandTakesFlagsOnEitherSide(t *testing.T) {
	tests := []struct {
		args    []string
		wantArg string
		wantDry bool
		wantMax int
		wantErr bool
	}{
		{[]string{"q"}, "q", false, 10, false},
		{[]string{"-dry-run", "q"}, "q", true, 10, false},
		{[]string{"q", "-dry-run"}, "q", true, 10, false},
		{[]string{"-max", "3", "q", "-dry-run"}, "q", true, 3, false},
		{[]string{"q", "-max", "3"}, "q", false, 3, false},
		{[]string{}, "", false, 10, true},
		{[]string{"q", "r"}, "", false, 10, true},
		{[]string{"q", "-nope"}, "", false, 10, true},
	}
	for _, tt := range tests {
		var dry bool
		var maxN int
		arg, err := command("dlq redrive", "dlq redrive QUEUE", tt.args, func(fs *flag.FlagSet) {
			fs.SetOutput(discard{})
			fs.BoolVar(&dry, "dry-run", false, "")
			fs.IntVar(&maxN, "max", 10, "")
		})
		if (err != nil) != tt.wantErr {
			t.Errorf("%q: error %v, want error %t", tt.args, err, tt.wantErr)
			continue
		}
		if err == nil && (arg != tt.wantArg || dry != tt.wantDry || maxN != tt.wantMax) {
			t.Errorf("%q: %q, dry-run %t, max %d; want %q, %t, %d", tt.args, arg, dry, maxN, tt.wantArg, tt.wantDry, tt.wantMax)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// show prints what each redrive of an order in Error would do, or why it
// is refused, so an operator reads the refusal before trying.
func TestShowPrintsTheRedriveChoices(t *testing.T) {
	v := api.OrderView{OrderID: "O", Status: order.StatusError, Redrive: []api.RedriveView{
		{Action: order.RedriveRetry, Refused: `the undo of charge-payment may have been done: redrive with "compensate" to resume undoing instead`},
		{Action: order.RedriveCompensate, Default: true, What: "The undo of charge-payment runs again"},
	}}
	var out strings.Builder
	writeOrder(&out, v)
	for _, want := range []string{
		`redrive -action retry: refused: the undo of charge-payment may have been done: redrive with "compensate"`,
		"redrive -action compensate (the default): The undo of charge-payment runs again",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("show prints\n%s\nwithout %q", out.String(), want)
		}
	}
}
