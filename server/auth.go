package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/krm-catalog/krm-catalog/internal/httpx"
	"github.com/krm-catalog/krm-catalog/store"
)

type publisherKey struct{}

// authenticate requires a bearer token and puts the publisher it acts for in the request context,
// with the token's id and the client's address for the audit log. It records the refusals of the
// requests it guards, failed authentications among them, in the audit log; refusals for too many
// requests are not recorded, so that a flood writes nothing.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		client := httpx.ClientIP(r)
		scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
			return store.Errorf(store.ErrUnauthorized, "no bearer token")
		}
		// every lookup is charged to its address before it is made, and given back when the
		// token is valid: of lookups that arrive at once no more than the budget are made, so
		// that guessing tokens costs the database nothing past it (valid tokens beyond the budget
		// wait for the lookups under way)
		done, wait, ok, err := s.limits.AuthFailures.Take(r.Context(), client)
		if err != nil {
			return err
		}
		if !ok {
			return s.limits.AuthFailures.Refusal(client, wait)
		}
		ctx := store.WithActor(r.Context(), store.Actor{Address: client})
		p, err := s.store.Authenticate(ctx, strings.TrimSpace(token))
		guess := errors.Is(err, store.ErrUnauthorized) // not a valid token, nor a failed database
		done(guess)
		if guess {
			s.auditRefusal(ctx, r, "", http.StatusUnauthorized, "invalid or revoked token")
		}
		if err != nil {
			return err
		}
		ctx = store.WithActor(context.WithValue(r.Context(), publisherKey{}, p.Publisher), store.Actor{TokenID: p.TokenID, Address: client})
		rec := &httpx.StatusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r.WithContext(ctx))
		if st := rec.Status(); st >= 400 && st != http.StatusTooManyRequests && st < 500 {
			s.auditRefusal(ctx, r, p.Publisher, st, http.StatusText(st))
		}
		return nil
	})
}

// auditActions name the guarded routes in the audit log as the store names their changes.
var auditActions = map[string]string{
	"PUT /api/v1/catalogs/{name}/versions/{version}":      "catalog.publish",
	"PUT /api/v1/definitions/{group}/{kind}":              "definition.publish",
	"PUT /api/v1/publishers/{name}/keys":                  "key.add",
	"DELETE /api/v1/publishers/{name}/keys/{fingerprint}": "key.delete",
	"POST /api/v1/publishers/{name}/keys/challenges":      "key.challenge",
	"POST /api/v1/catalogs/{name}/proposals":              "proposal.create",
	"POST /api/v1/catalogs/{name}/proposals/{id}/approve": "proposal.approve",
	"POST /api/v1/catalogs/{name}/proposals/{id}/reject":  "proposal.reject",
}

// auditRefusal records a refused change; a failure to record is logged, not answered.
func (s *Server) auditRefusal(ctx context.Context, r *http.Request, publisher string, status int, reason string) {
	route := r.Method + " " + routeOf(r)
	action, ok := auditActions[route]
	if !ok {
		action = route
	}
	// the refusal is recorded even when the client has left
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := s.store.AuditRefusal(ctx, publisher, action, r.URL.Path, status, reason); err != nil {
		s.logger.LogAttrs(ctx, slog.LevelWarn, "audit log: refusal not recorded", slog.Any("error", err))
	}
}

func publisherOf(ctx context.Context) string {
	p, _ := ctx.Value(publisherKey{}).(string)
	return p
}
