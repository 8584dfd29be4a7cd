// Package cache is a bounded map read without a lock, for what every
// request looks up and few requests add: a plan's limiters in a zone
// (limiter.Limiter.For), a door's resolutions (internal/verdict). Its
// cost per request is constant whatever its size or churn (STYLE rule
// 28): a hit is a hash, a few atomic loads and comparisons; a miss adds
// one entry, one allocation, evicting at most one other entry of one
// of its two sets, under those two sets' locks alone. Nothing is copied, and nothing
// is emptied at once.
//
// The map is set-associative, as a CPU cache is: a key's hash picks two
// sets of eight slots (two choices, so that sets seldom overflow while
// the map is below its bound), a new entry goes to the emptier,
// and where there is none a set evicts by CLOCK (second chance: a slot
// hit since the hand last passed is spared once). Sets are
// allocated in groups on first use, so a large bound costs memory only
// as it fills.
//
// An entry must be derived data: evicting it costs a recomputation, and
// must change nothing else.
package cache
