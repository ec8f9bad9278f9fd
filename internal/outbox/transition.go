package outbox

// transitions lists the allowed state changes (design.md §3.1). The store's
// write conditions enforce them; this table is what the tests hold the store
// to and what Go code consults before building a write.
var transitions = map[State][]State{
	StatePROPOSED:  {StateADMITTED, StateCANCELLED},
	StateADMITTED:  {StateEXECUTING, StateCANCELLED},
	StateEXECUTING: {StateEXECUTING, StateADMITTED, StateDONE, StateUNCERTAIN, StateFAILED, StateCANCELLED},
}

// CanTransition reports whether an action may move from one state to another.
func CanTransition(from, to State) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// States lists the seven states in lifecycle order.
func States() []State {
	return []State{StatePROPOSED, StateADMITTED, StateEXECUTING, StateDONE, StateUNCERTAIN, StateFAILED, StateCANCELLED}
}
