package server

import (
	"context"
	"net/http"
	"strings"

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
		publisher, err := s.store.Authenticate(r.Context(), strings.TrimSpace(token))
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
