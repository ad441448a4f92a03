package dc

import (
	"net/http"

	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/fleet/triton"
)

func (d *DC) sapiMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /services", d.listServices)
	mux.HandleFunc("GET /services/{uuid}", d.getService)
	mux.HandleFunc("PUT /services/{uuid}", d.updateService)
	mux.HandleFunc("GET /instances", d.listInstances)
	mux.HandleFunc("POST /instances", d.createInstance)
	mux.HandleFunc("GET /instances/{uuid}", d.getInstance)
	mux.HandleFunc("PUT /instances/{uuid}", d.updateInstance)
	mux.HandleFunc("DELETE /instances/{uuid}", d.deleteInstance)
	return withFallback(mux, "sapi")
}

func (d *DC) serviceView(s *service) triton.Service {
	return triton.Service{
		UUID: s.uuid, Name: s.name, ApplicationUUID: d.appUUID, Type: s.typ,
		Params: triton.ServiceParams{ImageUUID: s.imageUUID},
	}
}

func instanceView(in *instance) triton.Instance {
	return triton.Instance{
		UUID: in.uuid, ServiceUUID: in.serviceUUID, Type: in.typ,
		Params: triton.InstanceParams{ServerUUID: in.serverUUID, ImageUUID: in.imageUUID},
	}
}

func (d *DC) listServices(w http.ResponseWriter, r *http.Request) {
	name, typ := r.URL.Query().Get("name"), r.URL.Query().Get("type")
	d.mu.Lock()
	defer d.mu.Unlock()
	out := []triton.Service{}
	for _, id := range d.svcOrder {
		s := d.services[id]
		if (name == "" || s.name == name) && (typ == "" || s.typ == typ) {
			out = append(out, d.serviceView(s))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (d *DC) lookupService(w http.ResponseWriter, r *http.Request) *service {
	id, ok := pathUUID(w, r, "uuid")
	if !ok {
		return nil
	}
	s := d.services[id]
	if s == nil {
		notFound(w, "service", id)
	}
	return s
}

func (d *DC) getService(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s := d.lookupService(w, r); s != nil {
		writeJSON(w, http.StatusOK, d.serviceView(s))
	}
}

// checkAction validates SAPI's update action (default update).
func checkAction(w http.ResponseWriter, action string) (string, bool) {
	switch action {
	case "":
		return triton.ActionUpdate, true
	case triton.ActionUpdate, triton.ActionReplace, triton.ActionDelete:
		return action, true
	}
	invalid(w, "action must be update, replace or delete, got %q", action)
	return "", false
}

func (d *DC) updateService(w http.ResponseWriter, r *http.Request) {
	var req triton.UpdateServiceRequest
	if !readJSON(w, r, &req) {
		return
	}
	action, ok := checkAction(w, req.Action)
	if !ok {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.lookupService(w, r)
	if s == nil {
		return
	}
	switch {
	case action == triton.ActionDelete && req.Params != nil:
		s.imageUUID = uuid.Nil
	case req.Params != nil:
		s.imageUUID = req.Params.ImageUUID
	case action == triton.ActionReplace:
		s.imageUUID = uuid.Nil
	}
	writeJSON(w, http.StatusOK, d.serviceView(s))
}

func (d *DC) listInstances(w http.ResponseWriter, r *http.Request) {
	svc, ok := queryUUID(w, r, "service_uuid")
	if !ok {
		return
	}
	typ := r.URL.Query().Get("type")
	d.mu.Lock()
	defer d.mu.Unlock()
	out := []triton.Instance{}
	for _, id := range d.instOrder {
		in := d.instances[id]
		if (svc == uuid.Nil || in.serviceUUID == svc) && (typ == "" || in.typ == typ) {
			out = append(out, instanceView(in))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (d *DC) lookupInstance(w http.ResponseWriter, r *http.Request) *instance {
	id, ok := pathUUID(w, r, "uuid")
	if !ok {
		return nil
	}
	in := d.instances[id]
	if in == nil {
		notFound(w, "instance", id)
	}
	return in
}

func (d *DC) getInstance(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if in := d.lookupInstance(w, r); in != nil {
		writeJSON(w, http.StatusOK, instanceView(in))
	}
}

// createInstance is SAPI's CreateInstance: an agent instance is stored, not
// provisioned, and a given UUID that exists already is overwritten, not
// refused (sdc-sapi lib/server/model.js createInstance: putObject, then
// "skipping provision ... since instance type is agent").
func (d *DC) createInstance(w http.ResponseWriter, r *http.Request) {
	var req triton.CreateInstanceRequest
	if !readJSON(w, r, &req) {
		return
	}
	if req.ServiceUUID == uuid.Nil {
		invalid(w, "service_uuid is required")
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	svc := d.services[req.ServiceUUID]
	if svc == nil {
		notFound(w, "service", req.ServiceUUID)
		return
	}
	if svc.typ == triton.ServiceTypeAgent {
		if req.Params.ImageUUID == uuid.Nil {
			invalid(w, "params.image_uuid is required for agent instances")
			return
		}
		if req.Params.ServerUUID != uuid.Nil && d.servers[req.Params.ServerUUID] == nil {
			invalid(w, "params.server_uuid %s is not a known server", req.Params.ServerUUID)
			return
		}
	}
	id := req.UUID
	if id == uuid.Nil {
		id = uuid.New()
	}
	in := &instance{uuid: id, serviceUUID: svc.uuid, typ: svc.typ, serverUUID: req.Params.ServerUUID, imageUUID: req.Params.ImageUUID}
	if d.instances[id] == nil {
		d.instOrder = append(d.instOrder, id)
	}
	d.instances[id] = in
	writeJSON(w, http.StatusOK, instanceView(in))
}

func (d *DC) updateInstance(w http.ResponseWriter, r *http.Request) {
	var req triton.UpdateInstanceRequest
	if !readJSON(w, r, &req) {
		return
	}
	action, ok := checkAction(w, req.Action)
	if !ok {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	in := d.lookupInstance(w, r)
	if in == nil {
		return
	}
	if action != triton.ActionDelete && req.Params != nil {
		if req.Params.ServerUUID != uuid.Nil && in.serverUUID != uuid.Nil && req.Params.ServerUUID != in.serverUUID {
			invalid(w, "params.server_uuid cannot move an agent instance to another server")
			return
		}
		if in.serverUUID == uuid.Nil {
			// An update merges params: an older agent's instance gets the
			// server it is told.
			in.serverUUID = req.Params.ServerUUID
		}
		if req.Params.ImageUUID == uuid.Nil && action == triton.ActionUpdate {
			invalid(w, "params.image_uuid is required")
			return
		}
		in.imageUUID = req.Params.ImageUUID
	}
	if action == triton.ActionDelete && req.Params != nil {
		in.imageUUID = uuid.Nil
	}
	writeJSON(w, http.StatusOK, instanceView(in))
}

func (d *DC) deleteInstance(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	in := d.lookupInstance(w, r)
	if in == nil {
		return
	}
	delete(d.instances, in.uuid)
	d.instOrder = removeUUID(d.instOrder, in.uuid)
	w.WriteHeader(http.StatusNoContent)
}
