package machineapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// minimumStubIgnitionSpec: before each patch the MCO converts a user-data
// stub older than Ignition spec 3 and writes it back
// (machine-config-operator pkg/controller/bootimage/helpers.go,
// upgradeStubIgnitionIfRequired; MinimumAcceptableStubIgnitionSpec). An
// RHCOS boot image of today cannot read a spec 2 stub.
const minimumStubIgnitionSpec = "3"

// userDataKey is the Secret key of the Ignition stub (the MCO's
// pkg/controller/common, UserDataKey).
const userDataKey = "userData"

// UserDataSecret is the providerSpec's userDataSecret name ("" if none).
func (m *MachineSet) UserDataSecret() string {
	name, _, _ := unstructured.NestedString(m.ProviderSpec, "userDataSecret", "name")
	return name
}

// StubIgnitionSpec3 says whether ms's user-data Secret holds an Ignition
// stub of spec 3: ok false with why when not (fleetsaga does not convert
// one, the MCO does). err is the read's error (not found is a reason, not
// an err).
func (c *Client) StubIgnitionSpec3(ctx context.Context, ms *MachineSet) (ok bool, why string, err error) {
	name := ms.UserDataSecret()
	if name == "" {
		return false, "providerSpec has no userDataSecret", nil
	}
	u, err := c.get(ctx, GVRSecrets, NamespaceMachineAPI, name)
	if IsNotFound(err) {
		return false, "user-data secret " + NamespaceMachineAPI + "/" + name + " does not exist", nil
	}
	if err != nil {
		return false, "", err
	}
	data, _, _ := unstructured.NestedStringMap(u.Object, "data")
	raw, err := base64.StdEncoding.DecodeString(data[userDataKey])
	var ign struct {
		Ignition struct {
			Version string `json:"version"`
		} `json:"ignition"`
	}
	if err != nil || json.Unmarshal(raw, &ign) != nil {
		return false, "user-data secret " + name + ": " + userDataKey + " is not an Ignition JSON document", nil
	}
	v := ign.Ignition.Version
	if !strings.HasPrefix(v, minimumStubIgnitionSpec+".") {
		return false, "user-data secret " + name + " holds an Ignition stub of spec " + quoteOrNone(v) +
			": the MCO converts it to spec 3 before it patches; fleetsaga does not: let the MCO manage this MachineSet or convert the stub", nil
	}
	return true, "", nil
}

func quoteOrNone(v string) string {
	if v == "" {
		return "(none)"
	}
	return `"` + v + `"`
}
