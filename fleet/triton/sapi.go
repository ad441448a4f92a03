package triton

import (
	"context"
	"net/url"

	"github.com/google/uuid"
)

// ServiceTypeAgent is the SAPI service type of agents.
const ServiceTypeAgent = "agent"

// Service is a SAPI service; for an agent, Params.ImageUUID is the
// fleet-wide intended image.
type Service struct {
	UUID            uuid.UUID      `json:"uuid"`
	Name            string         `json:"name"`
	ApplicationUUID uuid.UUID      `json:"application_uuid"`
	Type            string         `json:"type"`
	Params          ServiceParams  `json:"params"`
	Metadata        map[string]any `json:"metadata,omitempty"`
}

// ServiceParams are the service parameters fleetsaga uses.
type ServiceParams struct {
	ImageUUID uuid.UUID `json:"image_uuid"`
}

// Instance is a SAPI instance: for an agent, the intent for one server.
type Instance struct {
	UUID        uuid.UUID      `json:"uuid"`
	ServiceUUID uuid.UUID      `json:"service_uuid"`
	Type        string         `json:"type"`
	Params      InstanceParams `json:"params"`
	Metadata    map[string]any `json:"metadata,omitempty"`
}

// InstanceParams are an agent instance's parameters. Instances of older
// agents carry no server_uuid (sdcadm lib/sdcadm.js listInsts: "we don't
// have a way to match an agent inst in SAPI to the server on which it
// lives"): ServerUUID is then uuid.Nil.
type InstanceParams struct {
	ServerUUID uuid.UUID `json:"server_uuid,omitzero"`
	ImageUUID  uuid.UUID `json:"image_uuid"`
}

// Update actions of PUT /services/:uuid and PUT /instances/:uuid.
const (
	ActionUpdate  = "update"
	ActionReplace = "replace"
	ActionDelete  = "delete"
)

// SAPI is a client of the Services API.
type SAPI struct{ c *client }

// NewSAPI returns a SAPI client for base.
func NewSAPI(base string, opts ...Option) (*SAPI, error) {
	c, err := newClient("sapi", base, opts)
	if err != nil {
		return nil, err
	}
	return &SAPI{c: c}, nil
}

// ListServicesOptions filters ListServices.
type ListServicesOptions struct {
	Name string
	Type string
}

// ListServices lists services.
func (s *SAPI) ListServices(ctx context.Context, o ListServicesOptions) ([]Service, error) {
	q := url.Values{}
	if o.Name != "" {
		q.Set("name", o.Name)
	}
	if o.Type != "" {
		q.Set("type", o.Type)
	}
	var out []Service
	err := s.c.get(ctx, "/services", q, &out)
	return out, err
}

// GetService returns one service.
func (s *SAPI) GetService(ctx context.Context, id uuid.UUID) (Service, error) {
	var out Service
	err := s.c.get(ctx, "/services/"+id.String(), nil, &out)
	return out, err
}

// UpdateServiceRequest is the body of PUT /services/:uuid.
type UpdateServiceRequest struct {
	Action string         `json:"action,omitempty"`
	Params *ServiceParams `json:"params,omitempty"`
}

// SetServiceImage sets the service's intended image (params.image_uuid).
func (s *SAPI) SetServiceImage(ctx context.Context, id, image uuid.UUID) (Service, error) {
	var out Service
	err := s.c.do(ctx, "PUT", "/services/"+id.String(), nil,
		UpdateServiceRequest{Action: ActionUpdate, Params: &ServiceParams{ImageUUID: image}}, &out)
	return out, err
}

// ListInstances lists the instances of a service (uuid.Nil: all). SAPI has
// no server filter: callers filter by Params.ServerUUID.
func (s *SAPI) ListInstances(ctx context.Context, service uuid.UUID) ([]Instance, error) {
	q := url.Values{}
	if service != uuid.Nil {
		q.Set("service_uuid", service.String())
	}
	var out []Instance
	err := s.c.get(ctx, "/instances", q, &out)
	return out, err
}

// GetInstance returns one instance.
func (s *SAPI) GetInstance(ctx context.Context, id uuid.UUID) (Instance, error) {
	var out Instance
	err := s.c.get(ctx, "/instances/"+id.String(), nil, &out)
	return out, err
}

// CreateInstanceRequest is the body of POST /instances (SAPI reads uuid,
// service_uuid, params, metadata, manifests and master; sdc-sapi
// lib/server/endpoints/instances.js).
type CreateInstanceRequest struct {
	UUID        uuid.UUID      `json:"uuid,omitempty"`
	ServiceUUID uuid.UUID      `json:"service_uuid"`
	Params      InstanceParams `json:"params"`
}

// CreateInstance creates an instance. SAPI stores it under the UUID given
// without looking for one already there (sdc-sapi lib/server/model.js
// createInstance: putObject; no 409): a create under a used UUID replaces
// that instance, so callers look the UUID up first.
func (s *SAPI) CreateInstance(ctx context.Context, r CreateInstanceRequest) (Instance, error) {
	var out Instance
	err := s.c.do(ctx, "POST", "/instances", nil, r, &out)
	return out, err
}

// UpdateInstanceRequest is the body of PUT /instances/:uuid.
type UpdateInstanceRequest struct {
	Action string          `json:"action,omitempty"`
	Params *InstanceParams `json:"params,omitempty"`
}

// SetInstanceImage sets the instance's params.image_uuid (keeping its
// server).
func (s *SAPI) SetInstanceImage(ctx context.Context, id, server, image uuid.UUID) (Instance, error) {
	var out Instance
	err := s.c.do(ctx, "PUT", "/instances/"+id.String(), nil,
		UpdateInstanceRequest{Action: ActionUpdate, Params: &InstanceParams{ServerUUID: server, ImageUUID: image}}, &out)
	return out, err
}

// DeleteInstance deletes an instance.
func (s *SAPI) DeleteInstance(ctx context.Context, id uuid.UUID) error {
	return s.c.do(ctx, "DELETE", "/instances/"+id.String(), nil, nil, nil)
}
