package console

import (
	"fmt"
	"net/http"
)

// An Access is what Config.Authorize lets a person do with the console.
// The zero Access lets them do nothing: the request is refused.
type Access int

const (
	// Look lets a person see keys, their usage and the live view, and
	// list keys: no change form is shown, and a change is refused (403,
	// audited with its key).
	Look Access = iota + 1
	// Change lets a person look, and reset and refund keys.
	Change
)

// mayChange refuses a change asked by someone who may only look.
func mayChange(who string, may Access) error {
	if may >= Change {
		return nil
	}
	return &refusal{http.StatusForbidden, fmt.Sprintf("console: %q may look, not change: ask someone who may reset and refund", who)}
}
