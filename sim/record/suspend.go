package record

// Suspension is a stretch in which the run had a gate rule suspended, and the Node writes
// the gate made meanwhile (counted at its own client: in-process gate only).
type Suspension struct {
	Rule     string
	From, To Mark
	Writes   int64
}
