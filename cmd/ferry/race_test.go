//go:build race

package main

// raceEnabled: the race detector slows the dev stack about tenfold.
const raceEnabled = true
