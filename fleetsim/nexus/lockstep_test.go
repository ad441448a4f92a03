package nexus_test

import (
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleetsim/nexus"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// The lockstep subset answers as Nexus does: the first target is rack
// setup's, enabled; a target must be an imported child of the current one;
// only the current target can be enabled or disabled.
func TestLockstepTargetViewSetEnableAndImport(t *testing.T) {
	s := rackSpec(t, spec.RackOwners{Executor: spec.Off(), MGSUpdates: spec.Off()}, []string{"internal_ntp", "nexus"}, []string{"nexus", "boundary_ntp"})
	srv := startSim(t, s, "")
	c := newLockstep(t, srv)

	first := c.target()
	require.True(t, first.Enabled, "rack setup leaves an enabled target")
	bp := c.blueprint(first.TargetID)
	assert.Nil(t, bp.ParentBlueprintID)
	require.Len(t, bp.Sleds, 2)
	for _, sl := range s.Racks[0].Sleds {
		sc := bp.Sleds[sl.ID]
		require.NotNil(t, sc)
		assert.Equal(t, uint64(3), sc.SledAgentGeneration)
		for _, z := range sl.Zones {
			require.Contains(t, sc.Zones, z.ID)
			assert.Equal(t, nexus.InService, sc.Zones[z.ID].Disposition.Kind)
		}
	}

	// Unknown blueprint: 404 ObjectNotFound, for view and target set.
	missing := uuid.New()
	status, eb := c.do(http.MethodGet, "/deployment/blueprints/all/"+missing.String(), nil, nil)
	assert.Equal(t, http.StatusNotFound, status)
	assert.Equal(t, "ObjectNotFound", eb.ErrorCode)
	assert.Equal(t, `not found: blueprint with id "`+missing.String()+`"`, eb.Message)
	status, eb = c.do(http.MethodPost, "/deployment/blueprints/target", map[string]any{"target_id": missing, "enabled": true}, nil)
	assert.Equal(t, http.StatusNotFound, status)
	assert.Equal(t, "ObjectNotFound", eb.ErrorCode)

	// The current target again, or a blueprint whose parent is not the
	// target: 400 InvalidRequest, target unchanged.
	status, eb = c.do(http.MethodPost, "/deployment/blueprints/target", map[string]any{"target_id": first.TargetID, "enabled": true}, nil)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, "InvalidRequest", eb.ErrorCode)
	assert.Equal(t, "Blueprint "+first.TargetID.String()+"'s parent blueprint is not the current target blueprint", eb.Message)

	child := c.makeChildTarget(func(*nexus.Blueprint) {}, true)
	assert.Equal(t, child.ID, c.target().TargetID)
	assert.Equal(t, child.Comment, c.targetBlueprint().Comment, "a blueprint reads back as imported")

	// A sibling of the new target (child of the old one) is refused.
	sibling := *bp
	sibling.ID, sibling.ParentBlueprintID = uuid.New(), &first.TargetID
	status, _ = c.do(http.MethodPost, "/deployment/blueprints/import", &sibling, nil)
	require.Equal(t, http.StatusNoContent, status)
	status, eb = c.do(http.MethodPost, "/deployment/blueprints/target", map[string]any{"target_id": sibling.ID, "enabled": true}, nil)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, "InvalidRequest", eb.ErrorCode)
	assert.Equal(t, child.ID, c.target().TargetID)

	// The same ID imported twice fails Nexus's insert: 500.
	status, eb = c.do(http.MethodPost, "/deployment/blueprints/import", &sibling, nil)
	assert.Equal(t, http.StatusInternalServerError, status)
	assert.Equal(t, "Internal", eb.ErrorCode)

	// Enabled flag: only on the current target.
	status, eb = c.do(http.MethodPut, "/deployment/blueprints/target/enabled", map[string]any{"target_id": first.TargetID, "enabled": false}, nil)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, "Blueprint "+first.TargetID.String()+" is not the current target blueprint", eb.Message)
	var tgt nexus.Target
	status, _ = c.do(http.MethodPut, "/deployment/blueprints/target/enabled", map[string]any{"target_id": child.ID, "enabled": false}, &tgt)
	require.Equal(t, http.StatusOK, status)
	assert.False(t, tgt.Enabled)
	assert.False(t, c.target().Enabled)

	// A body without the required fields is a 400 without error code.
	status, eb = c.unchecked().do(http.MethodPost, "/deployment/blueprints/import", map[string]any{"id": uuid.New()}, nil)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Empty(t, eb.ErrorCode)
}

// With the owners turned off there is no Nexus: nothing is served under
// /nexus/ and nothing writes the sleds' configs.
func TestOwnersTurnedOff(t *testing.T) {
	s := rackSpec(t, spec.NoOwners(), []string{"nexus"})
	srv := startSim(t, s, "")
	resp, err := http.Get(srv.URL + "/nexus/" + rackID + "/deployment/blueprints/target")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	var tr nexus.Truth
	getJSON(t, srv.URL+"/truth/nexus", &tr)
	assert.Empty(t, tr.Racks)
}
