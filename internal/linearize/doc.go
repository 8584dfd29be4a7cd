// Package linearize checks that the limiter's decisions are linearizable:
// it records histories of concurrent operations from several replicas
// (Allow with costs, Peek, Reserve then Settle, Reset, Refund, in-flight
// acquires and releases), each with its call and return times and its
// answer, while faults are injected, and checks each history with
// porcupine against a sequential model of the policy (Model): its
// windows, limits, debt and slots. A failed operation, which the model
// takes for one that may or may not have happened, must be one a fault
// explains (the harness bounds them).
package linearize
