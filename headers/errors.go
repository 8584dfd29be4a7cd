package headers

import "errors"

// ErrInvalidOption is wrapped by every error New returns: a header name
// that is not a valid field name, two headers given one name, a nil
// Option, an option that does not apply.
var ErrInvalidOption = errors.New("headers: invalid option")
