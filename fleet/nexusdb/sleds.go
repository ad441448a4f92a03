package nexusdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/google/uuid"
)

// Sled is one row of Nexus's sled table: where its sled-agent listens and
// whether the control plane still counts it.
type Sled struct {
	ID         uuid.UUID
	RackID     uuid.UUID
	IsScrimlet bool
	Serial     string
	IP         net.IP
	Port       int
	Policy     string // in_service | no_provision | expunged
	State      string // active | decommissioned
}

// ErrNoSuchSled: the sled table has no live row for the sled.
var ErrNoSuchSled = errors.New("nexusdb: no such sled")

// ErrAmbiguousSerial: more than one sled not decommissioned has the serial.
var ErrAmbiguousSerial = errors.New("nexusdb: serial names more than one sled")

// SledAgentURL is the base URL of the sled's sled-agent.
func (s Sled) SledAgentURL() string {
	return "http://" + net.JoinHostPort(s.IP.String(), strconv.Itoa(s.Port))
}

// InService reports whether the sled can still run zones (not expunged,
// not decommissioned).
func (s Sled) InService() bool { return s.Policy != "expunged" && s.State == "active" }

const sledColumns = `id, rack_id, is_scrimlet, serial_number, host(ip), port, sled_policy::text, sled_state::text`

func scanSled(row interface{ Scan(...any) error }) (Sled, error) {
	var s Sled
	var ip string
	if err := row.Scan(&s.ID, &s.RackID, &s.IsScrimlet, &s.Serial, &ip, &s.Port, &s.Policy, &s.State); err != nil {
		return s, err
	}
	if s.IP = net.ParseIP(ip); s.IP == nil {
		return s, fmt.Errorf("nexusdb: sled %s: bad ip %q", s.ID, ip)
	}
	return s, nil
}

// Sled reads one sled that is not deleted.
func (d *DB) Sled(ctx context.Context, id uuid.UUID) (Sled, error) {
	s, err := scanSled(d.db.QueryRowContext(ctx, fmt.Sprintf(
		`SELECT %s FROM %s WHERE id = $1 AND time_deleted IS NULL`, sledColumns, d.sleds), id))
	if errors.Is(err, sql.ErrNoRows) {
		return s, fmt.Errorf("%w: %s", ErrNoSuchSled, id)
	}
	if err != nil {
		return s, fmt.Errorf("nexusdb: sled %s: %w", id, err)
	}
	return s, nil
}

// SledBySerial reads the sled (not deleted, not decommissioned) with this
// baseboard serial. Serials are unique only among sleds not decommissioned,
// with the part number (commissioned_sled_uniqueness in omicron
// schema/crdb/dbinit.sql): a sled taken out and put back has an old row,
// and two parts may share a serial, which is refused, not guessed.
func (d *DB) SledBySerial(ctx context.Context, serial string) (Sled, error) {
	rows, err := d.db.QueryContext(ctx, fmt.Sprintf(
		`SELECT %s FROM %s WHERE serial_number = $1 AND time_deleted IS NULL AND sled_state != 'decommissioned' LIMIT 2`,
		sledColumns, d.sleds), serial)
	if err != nil {
		return Sled{}, fmt.Errorf("nexusdb: sled with serial %s: %w", serial, err)
	}
	defer rows.Close()
	var found []Sled
	for rows.Next() {
		s, err := scanSled(rows)
		if err != nil {
			return Sled{}, fmt.Errorf("nexusdb: sled with serial %s: %w", serial, err)
		}
		found = append(found, s)
	}
	if err := rows.Err(); err != nil {
		return Sled{}, fmt.Errorf("nexusdb: sled with serial %s: %w", serial, err)
	}
	switch len(found) {
	case 0:
		return Sled{}, fmt.Errorf("%w: serial %s", ErrNoSuchSled, serial)
	case 1:
		return found[0], nil
	}
	return Sled{}, fmt.Errorf("%w: sleds %s and %s, not decommissioned, have serial %s (their part numbers tell them apart; a lookup by serial cannot)",
		ErrAmbiguousSerial, found[0].ID, found[1].ID, serial)
}

// RackSleds lists the sleds (not deleted) of the rack that sled is in, in
// ID order, sled included.
func (d *DB) RackSleds(ctx context.Context, sled uuid.UUID) ([]Sled, error) {
	rows, err := d.db.QueryContext(ctx, fmt.Sprintf(
		`SELECT %s FROM %s WHERE time_deleted IS NULL
		   AND rack_id = (SELECT rack_id FROM %s WHERE id = $1 AND time_deleted IS NULL) ORDER BY id`,
		sledColumns, d.sleds, d.sleds), sled)
	if err != nil {
		return nil, fmt.Errorf("nexusdb: sleds of the rack of %s: %w", sled, err)
	}
	defer rows.Close()
	var out []Sled
	for rows.Next() {
		s, err := scanSled(rows)
		if err != nil {
			return nil, fmt.Errorf("nexusdb: sleds of the rack of %s: %w", sled, err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNoSuchSled, sled)
	}
	return out, nil
}
