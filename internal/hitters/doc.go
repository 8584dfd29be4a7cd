// Package hitters keeps, in bounded memory, the keys refused most and
// what refused each: a Space-Saving sketch (Metwally, Agrawal and El
// Abbadi, 2005) of a fixed number of keys, each with its runs of refused
// windows (a policy's window and the windows that followed it without a
// gap). A key refused more than N/capacity times of N refusals is in it
// for sure, its count high by at most its Err; a key pushed out by a
// flood of others loses its runs. Sketches of several replicas merge
// into one view (Merge), as Space-Saving sketches do: counts and errors
// add up.
//
// It knows nothing of HTTP, Redis or the clock: times are Unix
// milliseconds given by the caller (a decision's own instant), so tests
// pass them.
package hitters
