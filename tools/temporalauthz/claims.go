// Package temporalauthz is fleetsaga's extension of the Temporal server's
// stock authorization: the default JWT claim mapper and default authorizer
// decide everything they know (read, write, admin per namespace), and one
// role they cannot express is added, "approve": an approver may read the
// namespace and send a rollout's approval, and nothing else — not start,
// signal, cancel or terminate. The stock roles cannot say that: approving
// is an Update, which the default authorizer admits only with write, and
// write admits terminate too.
package temporalauthz

import (
	"strings"

	"github.com/golang-jwt/jwt/v4"
	"go.temporal.io/server/common/authorization"
)

// RoleApprove is the permission an approver's token carries,
// "NAMESPACE:approve" in the permissions claim (as "default:read" is).
const RoleApprove = "approve"

// Approver is what the claim mapper adds to the stock claims (in their
// Extensions): the namespaces whose rollouts the subject may approve.
type Approver struct {
	Namespaces map[string]bool
}

// claimMapper is the stock default JWT claim mapper, which verifies the
// token (signature against the JWKS, expiry, audience) and maps the
// standard roles, plus the approve permission read from the same token.
type claimMapper struct {
	stock     authorization.ClaimMapper
	claimName string
}

// NewClaimMapper wraps the stock mapper; claimName is the permissions
// claim (the config's permissionsClaimName, default "permissions").
func NewClaimMapper(stock authorization.ClaimMapper, claimName string) authorization.ClaimMapper {
	if claimName == "" {
		claimName = "permissions"
	}
	return &claimMapper{stock: stock, claimName: claimName}
}

func (m *claimMapper) GetClaims(ai *authorization.AuthInfo) (*authorization.Claims, error) {
	claims, err := m.stock.GetClaims(ai)
	if err != nil || claims == nil || ai.AuthToken == "" {
		return claims, err
	}
	// The stock mapper has verified this very token: reading one more
	// claim from it needs no second verification.
	_, raw, _ := strings.Cut(ai.AuthToken, " ")
	var jc jwt.MapClaims
	if _, _, err := jwt.NewParser().ParseUnverified(raw, &jc); err != nil {
		return claims, nil
	}
	perms, _ := jc[m.claimName].([]any)
	ap := Approver{Namespaces: map[string]bool{}}
	for _, p := range perms {
		s, _ := p.(string)
		if ns, role, ok := strings.Cut(s, ":"); ok && strings.EqualFold(role, RoleApprove) {
			ap.Namespaces[ns] = true
		}
	}
	if len(ap.Namespaces) > 0 {
		claims.Extensions = ap
	}
	return claims, nil
}
