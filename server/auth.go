package server

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/krm-catalog/krm-catalog/internal/httpx"
	"github.com/krm-catalog/krm-catalog/store"
)

type publisherKey struct{}

// authenticate requires a bearer token and puts the publisher it acts for in the request context.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
			return store.Errorf(store.ErrUnauthorized, "no bearer token")
		}
		// an address that failed too often is refused before its token is looked up, so that
		// guessing tokens costs the database nothing past the budget
		client := httpx.ClientIP(r)
		if wait, spent := s.limits.AuthFailures.Exhausted(client); spent {
			return s.limits.AuthFailures.Refusal(client, wait)
		}
		publisher, err := s.store.Authenticate(r.Context(), strings.TrimSpace(token))
		if errors.Is(err, store.ErrUnauthorized) {
			s.limits.AuthFailures.Charge(client)
		}
		if err != nil {
			return err
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), publisherKey{}, publisher)))
		return nil
	})
}

func publisherOf(ctx context.Context) string {
	p, _ := ctx.Value(publisherKey{}).(string)
	return p
}
