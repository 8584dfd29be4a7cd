package redisstore

// String names a failure mode in subtests: "closed", "open" or "local".
func (m failMode) String() string {
	switch m {
	case failOpen:
		return "open"
	case failLocal:
		return "local"
	}
	return "closed"
}

// options returns the options that build a store answering as m when
// Redis cannot decide, the fallback's limits divided by divisor for
// failLocal: none for failClosed, the default.
func (m failMode) options(divisor int) []Option {
	switch m {
	case failOpen:
		return []Option{WithFailOpen()}
	case failLocal:
		return []Option{WithFailLocal(divisor)}
	}
	return nil
}
