package workflows

// KindInfo ties an update kind to its workflow and input type.
type KindInfo struct {
	// Workflow is the workflow function (its name is the workflow type).
	Workflow any
	// NewInput returns a zero input to decode a plan entry into.
	NewInput func() UpdateInput
}

// Kinds lists the update kinds a plan can use. Each kind's file adds itself.
var Kinds = map[Kind]KindInfo{}
