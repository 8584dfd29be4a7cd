// Package refund holds the tests of charging by the response across
// replicas: the middleware's WithCountIf over the Redis store, where
// every replica sees the refunds of the others. It has no code of its
// own.
package refund
