package order_test

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"orderly/internal/order"
)

// Every row of the lifecycle is what the domain's function for its event
// decides: each form of the write the row describes (see row.decide) has
// the row's name and states, and the guard and the effects its prose
// says (see said).
func TestLifecycle(t *testing.T) {
	s := newSample()
	for _, r := range lifecycle {
		if r.decide == nil {
			t.Errorf("row %q: no function of the domain decides it", r.event)
			continue
		}
		forms := r.decide(s)
		if len(forms) == 0 {
			t.Errorf("row %q: its function decides no write", r.event)
			continue
		}
		guards, changes := make([]order.Guard, len(forms)), make([]order.Change, len(forms))
		for i, tr := range forms {
			guards[i], changes[i] = tr.Guard, tr.Change
			from, to := tr.Guard.State, tr.Applied(tr.Record).ProcessState
			if r.from == "any" {
				// A write on a record in any state leaves its state as it is.
				if from != to || r.to != "same" {
					t.Errorf("row %q, form %d: %s from %s to %s, want it to stay", r.event, i+1, tr.Name, from, to)
				}
			} else if from != r.from || to != r.to {
				t.Errorf("row %q, form %d: %s goes from %s to %s, the table says from %s to %s", r.event, i+1, tr.Name, from, to, r.from, r.to)
			}
			if tr.Name != r.write {
				t.Errorf("row %q, form %d: the domain's write is %q, the table says %q", r.event, i+1, tr.Name, r.write)
			}
		}
		for _, problem := range said(r.guard, guards, guardWords) {
			t.Errorf("row %q, guard: %s", r.event, problem)
		}
		for _, problem := range said(r.effects, changes, changeWords) {
			t.Errorf("row %q, effects: %s", r.event, problem)
		}
	}
}

// The words a row's prose says each field of order.Guard and order.Change
// with, when its write sets it. A field whose words depend on its value
// (an alert's kind, a status) is in said itself. A field with no words
// here fails TestLifecycle once a row's write sets it: give it words.
var (
	guardWords = map[string][]string{
		"Expired":        {"deadline passed"},
		"InTime":         {"deadline not passed"},
		"EarlierThan":    {"later than the stored one"},
		"SameCompleteBy": {"the deadline as found"},
		"Unlocked":       {"unclaimed"},
		"LockedBy":       {"the claim is the writer's"},
		"SameFailures":   {"failures as the image showed"},
		"BeatsBelow":     {"fewer heartbeats"},
		"NotCancelled":   {"not cancelled"},
		"Cancelled":      {"the order cancelled"},
		"NotParkedFor":   {"not parked for this version"},
		"NoAlertPending": {"no alert pending"},
		"AlertPending":   {"an alert pending"},
		"SameAlertKind":  {"of the kind found"},
		"SameDueAt":      {"`DueAt` as found"},
		"SameStatusURL":  {"the status URL as checked"},
		"DueBy":          {"`DueAt` no later than"},
		"Records":        {"records as counted", "no undo record yet"},
		"SameUndoFloor":  {"the undo floor as known"},
		"Version":        {"the order on its version"},
		"Other":          {"the next record NotStarted", "the failed step Failed"},
		"Processed":      {"the steps before it to undo Processed"},
	}
	changeWords = map[string][]string{
		"Claim":          {"attempt + 1"},
		"CompleteBy":     {"the claim's deadline", "claim window", "the deadline"},
		"DueAt":          {"`DueAt`", "the next look", "leased to the writer"},
		"Announce":       {"announced"},
		"Release":        {"the hold cleared"},
		"CountFailure":   {"failures + 1"},
		"CountNudge":     {"nudges + 1"},
		"CountHeartbeat": {"heartbeats + 1"},
		"Releases":       {"releases + 1"},
		"Deferrals":      {"deferrals + 1", "deferrals at their maximum"},
		"Error":          {"the order in Error"},
		"Parked":         {"the `Parked` mark"},
		"Cancel":         {"the cancel recorded"},
		"ClearAlert":     {"the alert cleared"},
		"Unwatch":        {"leaves the due index"},
		"Version":        {"the new version"},
		"Reference":      {"its reference", "the reference"},
		"Result":         {"its result", "the result"},
		"Settle":         {"no deadline"},
		"Fresh":          {"a fresh failure count"},
		"Undone":         {"step Undone"},
		"Skip":           {"skipped"},
		"Next":           {"the next record"},
		"Append":         {"undo records appended"},
		"Forward":        {"the failed step runs again"},
		"Drop":           {"the undo records dropped"},
		"UndoFloor":      {"the undo floor raised"},
		"OutOfError":     {"out of the error index"},
		"Watch":          {"in the due index"},
		"Unannounce":     {"claimed at once", "announced no more"},
		"Wait":           {"starts waiting"},
		"Await":          {"waits for its callback since", "waits for its service since"},
		"StatusURL":      {"the status URL"},
	}
	// unsaid are the fields the prose leaves to other columns: the
	// states (from and to), and the reason a write records, which
	// [Reasons] in docs/architecture.md describes for every write.
	unsaid = []string{"State", "Reason", "OrderReason"}
)

// said returns what prose, a row's guard or effects, gets wrong about
// forms, the Guards or Changes of the write's forms the row describes: a
// field some form sets that prose does not say in any of its words, and
// words prose says of a field every form leaves unset. An alert's kind is
// said as its name in backticks (prose may name an undo's kind beside
// it); a status as "the order <status>" (a guard's: "the order in
// <status>"), and the status an order ends in as "ends <status>".
func said[T order.Guard | order.Change](prose string, forms []T, words map[string][]string) []string {
	var problems []string
	statusWords := map[string]string{"Status": "the order ", "End": "ends "}
	if _, isGuard := any(forms[0]).(order.Guard); isGuard {
		statusWords["Status"] = "the order in "
	}
	typ := reflect.TypeFor[T]()
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		if slices.Contains(unsaid, name) {
			continue
		}
		// values are the field's values in the forms that set it.
		var values []reflect.Value
		for _, f := range forms {
			if v := reflect.ValueOf(f).Field(i); !v.IsZero() {
				values = append(values, v)
			}
		}
		sets := func(s string) bool {
			return slices.ContainsFunc(values, func(v reflect.Value) bool { return v.String() == s })
		}
		if name == "Alert" {
			for _, v := range values {
				if !strings.Contains(prose, "`"+v.String()+"`") {
					problems = append(problems, fmt.Sprintf("the write records a %s alert, which the table does not say", v.String()))
				}
			}
			continue
		}
		if w, ok := statusWords[name]; ok {
			for _, st := range order.Statuses {
				if says := strings.Contains(prose, w+string(st)); says != sets(string(st)) {
					problems = append(problems, fmt.Sprintf("a form's %s is %s: %t, and the table says %q: %t", name, st, !says, w+string(st), says))
				}
			}
			continue
		}
		w, known := words[name]
		if !known {
			if len(values) > 0 {
				problems = append(problems, fmt.Sprintf("the write sets %s, which has no words in the test's table", name))
			}
			continue
		}
		says := slices.ContainsFunc(w, func(w string) bool { return strings.Contains(prose, w) })
		switch {
		case len(values) > 0 && !says:
			problems = append(problems, fmt.Sprintf("the write sets %s, which the table does not say (as one of %q)", name, w))
		case len(values) == 0 && says:
			problems = append(problems, fmt.Sprintf("the table says %s (as one of %q), which no form of the write sets", name, w))
		}
	}
	return problems
}

// The table of transitions in docs/architecture.md (State model,
// Transitions) is the lifecycle, row for row.
func TestDocsShowTheLifecycle(t *testing.T) {
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range lifecycle {
		if line := r.markdown(); !strings.Contains(string(doc), line+"\n") {
			t.Errorf("docs/architecture.md lacks the row\n%s", line)
		}
	}
}
