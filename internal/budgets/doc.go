// Package budgets holds the tests that no two limiters share a budget
// unless the user asked for it: the one-line middlewares and limiters of
// equal policies on one store, in memory and in Redis, and the ways of
// sharing on purpose (one Limiter on two routes, two replicas on one
// Redis). It has no code of its own.
package budgets
