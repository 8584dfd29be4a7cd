// Package verdict is what the doors share once a request's keys are
// known: the phases of a request's life below the door (Life: admit its
// rates and caps, then settle: refund, release), asking a limiter at one
// reading of its clock (Ask), choosing the most restrictive of several
// decisions (More), and keeping, for a request that several limits
// applied to, the decision its answer describes and the policies that
// applied (Joined). The HTTP middleware and the gRPC interceptor
// (middleware/grpclimit) each identify, serve and describe a request in
// their own terms and admit and settle it with this package, so that a
// client is answered alike through either.
package verdict
