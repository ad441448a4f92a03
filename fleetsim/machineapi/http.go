package machineapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fm "github.com/fleetsaga/fleetsaga/fleet/machineapi"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/httpx"
)

// maxPatchBytes bounds a PATCH body (the API server's limit is 3 MiB; a
// MachineSet patch is a few KiB).
const maxPatchBytes = 1 << 20

// writeStatus writes err as a metav1.Status, the body client-go decodes
// into a *StatusError.
func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	st := err.Status()
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	httpx.WriteJSON(w, int(st.Code), st)
}

func notFoundPath(path string) *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
		Message: "the server could not find the requested resource (" + path + ")",
	}}
}

func unsupportedMediaType(ct string) *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: application/merge-patch+json (got %q)", ct),
	}}
}

// route is a parsed resource path.
type route struct {
	res       resource
	namespace string
	name      string
	sub       string
}

// serveKube serves /kube/clusters/{cluster}/...
func (s *Sim) serveKube(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/kube/clusters/")
	if !ok {
		writeStatus(w, notFoundPath(r.URL.Path))
		return
	}
	clusterName, rest, _ := strings.Cut(rest, "/")
	s.mu.Lock()
	c := s.clusters[clusterName]
	s.mu.Unlock()
	if c == nil {
		writeStatus(w, notFoundPath(r.URL.Path+": no cluster "+clusterName))
		return
	}
	segs := strings.Split(strings.Trim(rest, "/"), "/")
	if r.Method == http.MethodGet {
		if s.serveDiscovery(w, c, segs) {
			return
		}
	}
	rt, err := parseRoute(segs)
	if err != nil {
		writeStatus(w, err)
		return
	}
	switch r.Method {
	case http.MethodGet:
		if r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1" {
			writeStatus(w, apierrors.NewMethodNotSupported(rt.res.gvr.GroupResource(), "watch"))
			return
		}
		if rt.name == "" {
			s.list(w, r, c, rt)
		} else {
			s.get(w, c, rt)
		}
	case http.MethodPatch:
		s.patch(w, r, c, rt)
	default:
		writeStatus(w, apierrors.NewMethodNotSupported(rt.res.gvr.GroupResource(), strings.ToLower(r.Method)))
	}
}

// parseRoute parses api/v1/... or apis/{group}/{version}/..., then
// [namespaces/{ns}/]{resource}[/{name}[/{sub}]].
func parseRoute(segs []string) (route, *apierrors.StatusError) {
	path := strings.Join(segs, "/")
	var group, version string
	switch {
	case len(segs) >= 3 && segs[0] == "api":
		version, segs = segs[1], segs[2:]
	case len(segs) >= 4 && segs[0] == "apis":
		group, version, segs = segs[1], segs[2], segs[3:]
	default:
		return route{}, notFoundPath(path)
	}
	var rt route
	if len(segs) >= 3 && segs[0] == "namespaces" {
		rt.namespace, segs = segs[1], segs[2:]
		if rt.namespace == "" {
			return route{}, apierrors.NewBadRequest("empty namespace")
		}
	}
	if len(segs) == 0 || len(segs) > 3 {
		return route{}, notFoundPath(path)
	}
	res, ok := findResource(group, version, segs[0])
	if !ok {
		return route{}, notFoundPath(path)
	}
	rt.res = res
	if !res.namespaced && rt.namespace != "" {
		return route{}, notFoundPath(path)
	}
	if len(segs) >= 2 {
		rt.name = segs[1]
		if rt.name == "" {
			return route{}, notFoundPath(path)
		}
	}
	if len(segs) == 3 {
		rt.sub = segs[2]
		if rt.sub != "status" || !res.status {
			return route{}, notFoundPath(path)
		}
	}
	if res.namespaced && rt.name != "" && rt.namespace == "" {
		return route{}, notFoundPath(path)
	}
	return rt, nil
}

func (s *Sim) serveDiscovery(w http.ResponseWriter, c *cluster, segs []string) bool {
	switch {
	case len(segs) == 1 && segs[0] == "version":
		httpx.WriteJSON(w, http.StatusOK, map[string]string{
			"major": "1", "minor": "32", "gitVersion": "v1.32.5-fleetsim", "platform": "linux/amd64",
		})
	case len(segs) == 1 && segs[0] == "api":
		httpx.WriteJSON(w, http.StatusOK, metav1.APIVersions{
			TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
		})
	case len(segs) == 1 && segs[0] == "apis":
		list := metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
		seen := map[string]bool{}
		for _, r := range resources {
			if r.gvr.Group == "" || seen[r.gvr.Group] {
				continue
			}
			seen[r.gvr.Group] = true
			gv := metav1.GroupVersionForDiscovery{GroupVersion: apiVersion(r.gvr), Version: r.gvr.Version}
			list.Groups = append(list.Groups, metav1.APIGroup{Name: r.gvr.Group, Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv})
		}
		httpx.WriteJSON(w, http.StatusOK, list)
	case (len(segs) == 2 && segs[0] == "api") || (len(segs) == 3 && segs[0] == "apis"):
		gv := schema.GroupVersion{Version: segs[1]}
		if segs[0] == "apis" {
			gv = schema.GroupVersion{Group: segs[1], Version: segs[2]}
		}
		list := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
		for _, r := range resources {
			if r.gvr.GroupVersion() != gv {
				continue
			}
			verbs := metav1.Verbs{"get", "list"}
			if r.patchable {
				verbs = append(verbs, "patch")
			}
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: r.gvr.Resource, Namespaced: r.namespaced, Kind: r.kind, Verbs: verbs})
			if r.status && r.patchable {
				list.APIResources = append(list.APIResources, metav1.APIResource{Name: r.gvr.Resource + "/status", Namespaced: r.namespaced, Kind: r.kind, Verbs: metav1.Verbs{"get", "patch"}})
			}
		}
		if len(list.APIResources) == 0 {
			writeStatus(w, notFoundPath(strings.Join(segs, "/")))
			return true
		}
		httpx.WriteJSON(w, http.StatusOK, list)
	default:
		return false
	}
	_ = c
	return true
}

func writeObject(w http.ResponseWriter, status int, u *unstructured.Unstructured) {
	b, err := u.MarshalJSON()
	if err != nil {
		writeStatus(w, apierrors.NewInternalError(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func (s *Sim) get(w http.ResponseWriter, c *cluster, rt route) {
	s.mu.Lock()
	u := c.get(gvKey(rt.res.gvr), rt.namespace, rt.name)
	if u != nil {
		u = u.DeepCopy()
	}
	s.mu.Unlock()
	if u == nil {
		writeStatus(w, apierrors.NewNotFound(rt.res.gvr.GroupResource(), rt.name))
		return
	}
	writeObject(w, http.StatusOK, u)
}

func (s *Sim) list(w http.ResponseWriter, r *http.Request, c *cluster, rt route) {
	q := r.URL.Query()
	sel, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		writeStatus(w, apierrors.NewBadRequest("unable to parse requirement: "+err.Error()))
		return
	}
	if fs := q.Get("fieldSelector"); fs != "" {
		writeStatus(w, apierrors.NewBadRequest("fleetsim: field selectors are not supported"))
		return
	}
	s.mu.Lock()
	items := []any{}
	for _, u := range c.list(gvKey(rt.res.gvr)) {
		if rt.namespace != "" && u.GetNamespace() != rt.namespace {
			continue
		}
		if !sel.Matches(labels.Set(u.GetLabels())) {
			continue
		}
		items = append(items, u.DeepCopy().Object)
	}
	rv := c.rv
	s.mu.Unlock()
	b, err := json.Marshal(map[string]any{
		"apiVersion": apiVersion(rt.res.gvr), "kind": rt.res.kind + "List",
		"metadata": map[string]any{"resourceVersion": fmt.Sprint(rv)},
		"items":    items,
	})
	if err != nil {
		writeStatus(w, apierrors.NewInternalError(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// patch applies a JSON merge patch (RFC 7386) with the API server's rules:
// a resourceVersion in the patch must match (else 409 Conflict); the main
// resource keeps its status and /status keeps everything but status;
// name, namespace, uid, kind and apiVersion cannot change.
func (s *Sim) patch(w http.ResponseWriter, r *http.Request, c *cluster, rt route) {
	gr := rt.res.gvr.GroupResource()
	if !rt.res.patchable || rt.name == "" {
		writeStatus(w, apierrors.NewMethodNotSupported(gr, "patch"))
		return
	}
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || ct != "application/merge-patch+json" {
		writeStatus(w, unsupportedMediaType(r.Header.Get("Content-Type")))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPatchBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeStatus(w, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d bytes", maxPatchBytes)))
			return
		}
		writeStatus(w, apierrors.NewBadRequest("reading body: "+err.Error()))
		return
	}
	var patchObj map[string]any
	if err := json.Unmarshal(body, &patchObj); err != nil || patchObj == nil {
		writeStatus(w, apierrors.NewBadRequest("the patch is not a JSON object"))
		return
	}
	patchRV, _, _ := unstructured.NestedString(patchObj, "metadata", "resourceVersion")
	if v, found, _ := unstructured.NestedFieldNoCopy(patchObj, "metadata", "resourceVersion"); found {
		if _, isStr := v.(string); !isStr {
			writeStatus(w, apierrors.NewBadRequest("metadata.resourceVersion must be a string"))
			return
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	key := gvKey(rt.res.gvr)
	cur := c.get(key, rt.namespace, rt.name)
	if cur == nil {
		writeStatus(w, apierrors.NewNotFound(gr, rt.name))
		return
	}
	isMS := rt.res.gvr == fm.GVRMachineSets && rt.sub == ""
	conflict := func(why string) {
		if st := c.stats[rt.name]; st != nil && rt.res.gvr == fm.GVRMachineSets {
			st.Conflicts++
		}
		writeStatus(w, apierrors.NewConflict(gr, rt.name, errors.New(why)))
	}
	if patchRV != "" && patchRV != cur.GetResourceVersion() {
		conflict("the object has been modified; please apply your changes to the latest version and try again")
		return
	}
	if isMS {
		if _, fired := s.env.Faults.Fire(faults.PatchConflict, faultTarget(c.name, rt.name)); fired {
			// Another writer got there first: the object changes underneath.
			touched := cur.DeepCopy()
			ann := touched.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			ann["fleetsim.io/concurrent-write"] = fmt.Sprint(c.rv + 1)
			touched.SetAnnotations(ann)
			c.bump(touched)
			c.put(key, touched)
			c.event("machineset " + rt.name + ": concurrent write (patch_conflict)")
			conflict("the object has been modified; please apply your changes to the latest version and try again")
			return
		}
	}
	curJSON, err := cur.MarshalJSON()
	if err != nil {
		writeStatus(w, apierrors.NewInternalError(err))
		return
	}
	merged, err := jsonpatch.MergePatch(curJSON, body)
	if err != nil {
		writeStatus(w, apierrors.NewBadRequest("applying merge patch: "+err.Error()))
		return
	}
	next := &unstructured.Unstructured{}
	if err := next.UnmarshalJSON(merged); err != nil {
		writeStatus(w, apierrors.NewBadRequest("patched object is invalid: "+err.Error()))
		return
	}
	if errs := immutable(cur, next); len(errs) > 0 {
		writeStatus(w, apierrors.NewInvalid(schema.GroupKind{Group: gr.Group, Kind: rt.res.kind}, rt.name, errs))
		return
	}
	// Subresource rules.
	if rt.res.status {
		curStatus, hasStatus := cur.Object["status"]
		if rt.sub == "status" {
			st := next.Object["status"]
			next = cur.DeepCopy()
			if st == nil {
				delete(next.Object, "status")
			} else {
				next.Object["status"] = st
			}
		} else if hasStatus {
			next.Object["status"] = curStatus
		} else {
			delete(next.Object, "status")
		}
	}
	if rt.res.gvr == fm.GVRMachineSets {
		if errs := validateMachineSet(next); len(errs) > 0 {
			writeStatus(w, apierrors.NewInvalid(schema.GroupKind{Group: gr.Group, Kind: rt.res.kind}, rt.name, errs))
			return
		}
	}
	next.SetResourceVersion(cur.GetResourceVersion())
	if reflect.DeepEqual(cur.Object, next.Object) {
		writeObject(w, http.StatusOK, next) // no-op patch: unchanged resourceVersion
		if isMS {
			c.stats[rt.name].Patches++
		}
		return
	}
	if rt.sub == "" && !reflect.DeepEqual(cur.Object["spec"], next.Object["spec"]) {
		next.SetGeneration(cur.GetGeneration() + 1)
	}
	c.bump(next)
	c.put(key, next)
	resp := next.DeepCopy()
	if isMS {
		s.afterMachineSetPatch(c, cur, next)
	}
	writeObject(w, http.StatusOK, resp)
}

// afterMachineSetPatch counts the patch, lets the reverting actor undo a
// providerSpec change, and reconciles replicas. Caller holds s.mu.
func (s *Sim) afterMachineSetPatch(c *cluster, old, next *unstructured.Unstructured) {
	st := c.stats[next.GetName()]
	if st == nil {
		st = &MachineSetStats{}
		c.stats[next.GetName()] = st
	}
	st.Patches++
	oldPS, _, _ := unstructured.NestedFieldCopy(old.Object, "spec", "template", "spec", "providerSpec")
	newPS, _, _ := unstructured.NestedFieldCopy(next.Object, "spec", "template", "spec", "providerSpec")
	if !reflect.DeepEqual(oldPS, newPS) {
		st.ImagePatches++
		_, oldImg := imageOf(asMap(asMap(oldPS)["value"]))
		_, newImg := imageOf(asMap(asMap(newPS)["value"]))
		c.event(fmt.Sprintf("machineset %s: image %s -> %s", next.GetName(), oldImg, newImg))
		if _, fired := s.env.Faults.Fire(faults.MachineSetRevert, faultTarget(c.name, next.GetName())); fired {
			reverted := next.DeepCopy()
			_ = unstructured.SetNestedField(reverted.Object, oldPS, "spec", "template", "spec", "providerSpec")
			reverted.SetGeneration(next.GetGeneration() + 1)
			c.bump(reverted)
			c.put(gvKey(fm.GVRMachineSets), reverted)
			st.Reverts++
			c.event(fmt.Sprintf("machineset %s: another actor reverted the image to %s", next.GetName(), oldImg))
			next = reverted
		}
	}
	oldReplicas, _, _ := unstructured.NestedInt64(old.Object, "spec", "replicas")
	newReplicas, _, _ := unstructured.NestedInt64(next.Object, "spec", "replicas")
	if oldReplicas != newReplicas {
		c.event(fmt.Sprintf("machineset %s: replicas %d -> %d", next.GetName(), oldReplicas, newReplicas))
		s.reconcileReplicas(c, next)
	}
	s.mcoSoon(c)
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	if m == nil {
		return map[string]any{}
	}
	return m
}

func immutable(cur, next *unstructured.Unstructured) field.ErrorList {
	var errs field.ErrorList
	md := field.NewPath("metadata")
	if next.GetName() != cur.GetName() {
		errs = append(errs, field.Invalid(md.Child("name"), next.GetName(), "field is immutable"))
	}
	if next.GetNamespace() != cur.GetNamespace() {
		errs = append(errs, field.Invalid(md.Child("namespace"), next.GetNamespace(), "field is immutable"))
	}
	if next.GetUID() != cur.GetUID() {
		errs = append(errs, field.Invalid(md.Child("uid"), next.GetUID(), "field is immutable"))
	}
	if next.GetKind() != cur.GetKind() {
		errs = append(errs, field.Invalid(field.NewPath("kind"), next.GetKind(), "field is immutable"))
	}
	if next.GetAPIVersion() != cur.GetAPIVersion() {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), next.GetAPIVersion(), "field is immutable"))
	}
	return errs
}

func validateMachineSet(u *unstructured.Unstructured) field.ErrorList {
	var errs field.ErrorList
	sp := field.NewPath("spec")
	if v, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "replicas"); found {
		n, ok := v.(int64)
		if !ok || n < 0 || n > 1000 {
			errs = append(errs, field.Invalid(sp.Child("replicas"), v, "must be an integer within 0..1000"))
		}
	}
	v, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "template", "spec", "providerSpec", "value")
	vm, ok := v.(map[string]any)
	if !found || !ok {
		errs = append(errs, field.Required(sp.Child("template", "spec", "providerSpec", "value"), "must be an object"))
	} else if platformOfKind(fmt.Sprint(vm["kind"])) == "" {
		errs = append(errs, field.Invalid(sp.Child("template", "spec", "providerSpec", "value", "kind"), vm["kind"], "unknown providerSpec kind"))
	}
	return errs
}
