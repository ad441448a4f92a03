package spec

// Datacenter is the Triton-style datacenter: servers (CNAPI) with their
// agents, agent images (IMGAPI) and agent services/instances (SAPI).
// The datacenter simulator owns this section and extends it.
type Datacenter struct {
	Servers []Server `json:"servers"`
	Images  []Image  `json:"images"`
}

// Server is one compute node.
type Server struct{}

// Image is one agent image in IMGAPI.
type Image struct{}

func (d Datacenter) validate() error { return nil }
