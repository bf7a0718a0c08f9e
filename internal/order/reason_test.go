package order_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"orderly/internal/order"
)

// errPermanent stands for the remote client's fault class.
var errPermanent = errors.New("permanent fault")

func TestReasonFor(t *testing.T) {
	declined := &order.ServiceError{Service: "payment", Status: 402, Message: "card declined"}
	huge := strings.Repeat("card declined ", 64<<10/14)
	tests := []struct {
		name string
		err  error
		// want is the reason, or its start when cut is set.
		want string
		cut  bool
	}{
		{"a refusal, in the service's words", declined, "remote service payment refused the request: card declined", false},
		{"a refusal as the remote client wraps it", fmt.Errorf("payment: POST /payment/charges: %w: %w", declined, errPermanent),
			"remote service payment refused the request: card declined", false},
		{"a refusal without words", &order.ServiceError{Service: "shipping", Status: 422}, "remote service shipping refused the request", false},
		{"64 KiB of words are cut", &order.ServiceError{Service: "payment", Status: 402, Message: huge},
			"remote service payment refused the request: card declined card declined", true},
		{"words on several lines become one", &order.ServiceError{Service: "inventory", Status: 409, Message: "out of stock:\n\tSKU-1\r\n\x00SKU-2"},
			"remote service inventory refused the request: out of stock: SKU-1 SKU-2", false},
		{"bytes that are not UTF-8", &order.ServiceError{Service: "payment", Status: 402, Message: "d\xffclined"},
			"remote service payment refused the request: d\uFFFDclined", false},
		{"an AWS error is internal, whatever it names", fmt.Errorf("send request: %w", errors.New(
			"operation error SQS: SendMessage, https response error StatusCode: 403, RequestID: 1f7e, api error AccessDenied: User: "+
				"arn:aws:sts::123456789012:assumed-role/orderly-prod-scheduler/s is not authorized to perform: sqs:sendmessage")),
			order.InternalError, false},
		{"a fault of the agent's own is internal", fmt.Errorf("remote service %q: unknown: %w", "gifts", errPermanent), order.InternalError, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := order.ReasonFor(tt.err)
			if !utf8.ValidString(got) || strings.ContainsAny(got, "\n\r\t\x00") {
				t.Errorf("ReasonFor = %q, want one line of UTF-8", got)
			}
			if len(got) > len("remote service payment refused the request: ")+order.MaxDetailBytes {
				t.Errorf("ReasonFor is %d bytes, want the service's words within %d", len(got), order.MaxDetailBytes)
			}
			switch {
			case tt.cut && (!strings.HasPrefix(got, tt.want) || !strings.HasSuffix(got, "…")):
				t.Errorf("ReasonFor = %q, want %q… cut with an ellipsis", got, tt.want)
			case !tt.cut && got != tt.want:
				t.Errorf("ReasonFor = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestReplyReason(t *testing.T) {
	tests := []struct {
		name, reason, want string
	}{
		{"a reason of this build's agent is kept", "remote service payment refused the request: card declined",
			"remote service payment refused the request: card declined"},
		{"no reason", "", "the agent reported a permanent fault without a reason"},
		{"a long reason is cut", strings.Repeat("é", order.MaxReasonBytes), strings.Repeat("é", (order.MaxReasonBytes-len("…"))/2) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := order.ReplyReason(tt.reason); got != tt.want {
				t.Errorf("ReplyReason = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCut(t *testing.T) {
	tests := []struct {
		name, s string
		max     int
		want    string
	}{
		{"short text is kept", "card declined", 64, "card declined"},
		{"at the bound", "abcdef", 6, "abcdef"},
		{"over the bound, on a character's boundary", "ééé", 5, "é…"},
		{"a cut inside a character", "ééé", 4, "…"},
		{"over the bound", "abcdefgh", 6, "abc…"},
		{"lines become one", "a\n\tb\r\n\x00c", 64, "a b c"},
		{"bytes that are not UTF-8", "d\xffclined", 64, "d\uFFFDclined"},
		{"a bound under the ellipsis", "abcdef", 1, "…"},
		{"only spaces", " \n\t", 64, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := order.Cut(tt.s, tt.max); got != tt.want {
				t.Errorf("Cut(%q, %d) = %q, want %q", tt.s, tt.max, got, tt.want)
			}
		})
	}
}
