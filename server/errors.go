package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/store"
)

// apiError is the JSON body of every error response.
type apiError struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Message string        `json:"message"`
	Details []errorDetail `json:"details,omitempty"`
}

// errorDetail is one finding behind an error: where in the document, and what.
type errorDetail struct {
	Severity string `json:"severity,omitempty"`
	Path     string `json:"path"`
	Line     int    `json:"line,omitempty"`
	Column   int    `json:"column,omitempty"`
	Message  string `json:"message"`
}

// invalidDocument is a document that failed validation (422).
type invalidDocument struct {
	message  string
	findings catalog.Findings
}

func (e *invalidDocument) Error() string { return e.message }

// badRequest is a request the client must change (400).
type badRequest struct{ message string }

func (e *badRequest) Error() string { return e.message }

func details(fs catalog.Findings) []errorDetail {
	out := make([]errorDetail, 0, len(fs))
	for _, f := range fs {
		out = append(out, errorDetail{Severity: string(f.Severity), Path: f.Pointer, Line: f.Line, Column: f.Column, Message: f.Message})
	}
	return out
}

// statusOf maps an error to its HTTP status and the message a client may see. It is the one place
// where domain errors become status codes.
func statusOf(err error) (int, string, []errorDetail) {
	var (
		invalid  *invalidDocument
		bad      *badRequest
		tooLarge *http.MaxBytesError
		upstream *upstreamError
	)
	switch {
	case errors.As(err, &upstream):
		return http.StatusBadGateway, upstream.message, nil
	case errors.As(err, &invalid):
		return http.StatusUnprocessableEntity, invalid.message, details(invalid.findings)
	case errors.As(err, &bad):
		return http.StatusBadRequest, bad.message, nil
	case errors.As(err, &tooLarge):
		return http.StatusRequestEntityTooLarge, "request body is larger than the limit of " + humanSize(tooLarge.Limit), nil
	case errors.Is(err, store.ErrBadPageToken), errors.Is(err, store.ErrInvalid):
		return http.StatusBadRequest, err.Error(), nil
	case errors.Is(err, store.ErrUnauthorized):
		return http.StatusUnauthorized, "a valid bearer token is required: Authorization: Bearer <token> (see `krm-catalog token create`)", nil
	case errors.Is(err, store.ErrForbidden):
		return http.StatusForbidden, err.Error(), nil
	case errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound, err.Error(), nil
	case errors.Is(err, store.ErrConflict):
		return http.StatusConflict, err.Error(), nil
	}
	return http.StatusInternalServerError, "internal error", nil
}

// handlerFunc is a handler that returns its error instead of writing it.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// handle adapts a handlerFunc: the one place that writes error responses.
func (s *Server) handle(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := h(w, r)
		if err == nil {
			return
		}
		status, msg, det := statusOf(err)
		if status == http.StatusInternalServerError || status == http.StatusBadGateway {
			s.logger.ErrorContext(r.Context(), "request failed", slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Any("error", err))
		}
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="krm-catalog"`)
		}
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, status, apiError{Error: errorBody{Message: msg, Details: det}})
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the status is sent; a failed write means the client left
}

func humanSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
