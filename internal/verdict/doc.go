// Package verdict is what the doors share once a request's key is known:
// asking a limiter at one reading of its clock (Ask), choosing the most
// restrictive of several decisions (More), and keeping, for a request
// that several limits applied to, the decision its answer describes and
// the policies that applied (Joined). The HTTP middleware and the gRPC
// interceptor (middleware/grpclimit) both decide with it, so that a
// client is answered alike through either.
package verdict
