package cost

import (
	"orderly/internal/prices"

	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
)

// Budget is the most each scenario may cost per order: requests by
// operation, capacity units, messages, and dollars per million orders at
// both loads. It is checked in (cost/budget.json) and tested in make test,
// so a change that makes an order dearer fails until the budget is raised
// on purpose.
type Budget struct {
	Note      string                    `json:"note"`
	Scenarios map[string]ScenarioBudget `json:"scenarios"`
}

// ScenarioBudget is one scenario's allowance per order.
type ScenarioBudget struct {
	Calls map[string]float64 `json:"calls"`
	// ConditionFailures bounds the writes whose condition failed (a
	// duplicate delivery, a lost race): noise of at-least-once delivery,
	// kept apart from the path's own requests, units and dollars so the
	// check is exact for those and tolerant here.
	ConditionFailures float64 `json:"conditionFailures"`
	TableWrites       float64 `json:"tableWriteUnits"`
	IndexWrites       float64 `json:"indexWriteUnits"`
	Reads             float64 `json:"readUnits"`
	Messages          float64 `json:"sqsMessages"`
	StreamInvocations float64 `json:"streamInvocations"`
	HighLoadDollars   float64 `json:"dollarsPerMillionHighLoad"`
	LowLoadDollars    float64 `json:"dollarsPerMillionLowLoad"`
}

// LoadBudget reads a budget file.
func LoadBudget(path string) (Budget, error) {
	var b Budget
	data, err := os.ReadFile(path)
	if err != nil {
		return b, fmt.Errorf("read cost budget: %w", err)
	}
	if err := json.Unmarshal(data, &b); err != nil {
		return b, fmt.Errorf("parse cost budget %s: %w", path, err)
	}
	return b, nil
}

// Measured is what a scenario's per-order usage comes to, in the budget's
// terms: the path's own cost, and apart from it the writes whose
// condition failed.
func Measured(u PerOrder, p prices.Prices) ScenarioBudget {
	failures := 0.0
	for _, c := range u.ConditionFailures {
		failures += c
	}
	u = u.WithoutConditionFailures()
	calls := map[string]float64{}
	for op, n := range u.Calls {
		calls[op.String()] = round(n)
	}
	return ScenarioBudget{
		Calls: calls, ConditionFailures: round(failures),
		TableWrites: round(u.TableWrites), IndexWrites: round(u.IndexWrites), Reads: round(u.Reads),
		Messages: round(u.RequestMessages + u.ReplyMessages), StreamInvocations: round(u.StreamInvocations),
		HighLoadDollars: round(Price(p, u, HighLoad, DeployedMemory, false).Total),
		LowLoadDollars:  round(Price(p, u, LowLoad, DeployedMemory, false).Total),
	}
}

func round(f float64) float64 { return math.Round(f*100) / 100 }

// Over lists every way measured exceeds the budget; empty when within it.
func (b ScenarioBudget) Over(measured ScenarioBudget) []string {
	var over []string
	check := func(what string, got, limit float64) {
		if got > limit+1e-9 {
			over = append(over, fmt.Sprintf("%s: %.2f per order, budget %.2f", what, got, limit))
		}
	}
	// Each write whose condition failed stands for at most one message
	// delivered twice, whose handler sent one message more (a reply to a
	// duplicate request). That message, and its share of the path's
	// dollars, is the same at-least-once noise, within the same bound.
	noise := min(measured.ConditionFailures, b.ConditionFailures)
	perMessage := func(dollars float64) float64 {
		if b.Messages == 0 {
			return 0
		}
		return noise * dollars / b.Messages
	}
	names := make([]string, 0, len(measured.Calls))
	for name := range measured.Calls {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		limit := b.Calls[name]
		if name == "SQS SendMessage" {
			limit += noise
		}
		check(name+" requests", measured.Calls[name], limit)
	}
	check("writes whose condition failed", measured.ConditionFailures, b.ConditionFailures)
	check("table write units", measured.TableWrites, b.TableWrites)
	check("index write units", measured.IndexWrites, b.IndexWrites)
	check("read units", measured.Reads, b.Reads)
	check("SQS messages", measured.Messages, b.Messages+noise)
	check("stream invocations", measured.StreamInvocations, b.StreamInvocations)
	check("$ per million at high load", measured.HighLoadDollars, b.HighLoadDollars+perMessage(b.HighLoadDollars))
	check("$ per million at one message per batch", measured.LowLoadDollars, b.LowLoadDollars+perMessage(b.LowLoadDollars))
	return over
}

// String renders a scenario budget for a failure message.
func (b ScenarioBudget) String() string {
	data, _ := json.MarshalIndent(b, "", "  ")
	return strings.TrimSpace(string(data))
}
