package agents

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/fleet/triton"
)

// ServerSelection says which servers an agent workflow covers: all of them,
// an explicit list (UUIDs or hostnames), or those whose traits match every
// given key=value (a label selector). Exactly one is set.
type ServerSelection struct {
	All     bool              `json:"all,omitempty"`
	Servers []string          `json:"servers,omitempty"`
	Traits  map[string]string `json:"traits,omitempty"`
}

// Validate checks the selection without I/O.
func (s ServerSelection) Validate() error {
	n := 0
	if s.All {
		n++
	}
	if len(s.Servers) > 0 {
		n++
	}
	if len(s.Traits) > 0 {
		n++
	}
	if n != 1 {
		return errors.New("select servers with exactly one of: all, a list of servers, or traits")
	}
	return nil
}

// String describes the selection for logs and summaries.
func (s ServerSelection) String() string {
	switch {
	case s.All:
		return "all servers"
	case len(s.Servers) > 0:
		return fmt.Sprintf("%d listed servers", len(s.Servers))
	default:
		keys := make([]string, 0, len(s.Traits))
		for k, v := range s.Traits {
			keys = append(keys, k+"="+v)
		}
		sort.Strings(keys)
		return "servers with " + strings.Join(keys, ",")
	}
}

// SelectServers applies a selection and exclusions to CNAPI's servers.
// Unknown names in the list or the exclusions fail the whole request: a
// typo must not silently shrink or widen a rollout. The order is the list's
// for an explicit list, else CNAPI's.
func SelectServers(all []triton.Server, sel ServerSelection, exclude []string) (chosen []triton.Server, excluded int, err error) {
	if err := sel.Validate(); err != nil {
		return nil, 0, err
	}
	byUUID := make(map[uuid.UUID]int, len(all))
	byHost := make(map[string]int, len(all))
	for i, s := range all {
		byUUID[s.UUID] = i
		byHost[s.Hostname] = i
	}
	lookup := func(name string) (int, bool) {
		if u, err := uuid.Parse(name); err == nil {
			i, ok := byUUID[u]
			return i, ok
		}
		i, ok := byHost[name]
		return i, ok
	}
	var unknown []string
	skip := map[int]bool{}
	for _, name := range exclude {
		i, ok := lookup(strings.TrimSpace(name))
		if !ok {
			unknown = append(unknown, name)
			continue
		}
		skip[i] = true
	}
	taken := map[int]bool{}
	take := func(i int) {
		if taken[i] {
			return
		}
		taken[i] = true
		if skip[i] {
			excluded++
			return
		}
		chosen = append(chosen, all[i])
	}
	switch {
	case sel.All:
		for i := range all {
			take(i)
		}
	case len(sel.Servers) > 0:
		for _, name := range sel.Servers {
			i, ok := lookup(strings.TrimSpace(name))
			if !ok {
				unknown = append(unknown, name)
				continue
			}
			take(i)
		}
	default:
		for i, s := range all {
			match := true
			for k, v := range sel.Traits {
				if s.Trait(k) != v {
					match = false
					break
				}
			}
			if match {
				take(i)
			}
		}
	}
	if len(unknown) > 0 {
		return nil, 0, fmt.Errorf("unknown servers (not in CNAPI): %s", strings.Join(unknown, ", "))
	}
	return chosen, excluded, nil
}

// SkipReason says why a server cannot be touched ("" when it can).
func SkipReason(s triton.Server) string {
	switch {
	case s.Status != triton.StatusRunning:
		return "offline: status " + s.Status
	case !s.Setup:
		return "not set up"
	}
	return ""
}

// OrderAgents puts the core agents first, in CoreAgents order (each is
// installed alone), then the others by name.
func OrderAgents(in []PlannedAgent) []PlannedAgent {
	out := slices.Clone(in)
	rank := func(name string) int {
		for i, c := range CoreAgents {
			if c == name {
				return i
			}
		}
		return len(CoreAgents)
	}
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := rank(out[i].Name), rank(out[j].Name)
		if ri != rj {
			return ri < rj
		}
		return out[i].Name < out[j].Name
	})
	return out
}
