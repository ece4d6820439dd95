package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/internal/httpx"
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

// tooCostly is a document past a limit on what reading it may cost (413): its nodes, nesting or
// expansion.
type tooCostly struct {
	message  string
	findings catalog.Findings
}

func (e *tooCostly) Error() string { return e.message }

// unfinished is work the request's deadline (or its client's leaving) stopped (503).
type unfinished struct{ err error }

func (e *unfinished) Error() string { return "the work stopped: " + e.err.Error() }
func (e *unfinished) Unwrap() error { return e.err }

// methodNotAllowed is a path the API serves, asked with a method it does not take there (405).
type methodNotAllowed struct{ method string }

func (e *methodNotAllowed) Error() string {
	return "this API endpoint does not take " + e.method + " (see /api/v1/openapi.yaml)"
}

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
		method   *methodNotAllowed
		tooLarge *http.MaxBytesError
		upstream *upstreamError
	)
	var (
		tooMany *httpx.TooManyRequests
		slow    *bodyTimeout
		costly  *tooCostly
		stopped *unfinished
	)
	switch {
	case errors.As(err, &costly):
		return http.StatusRequestEntityTooLarge, costly.message, details(costly.findings)
	case errors.As(err, &stopped) && errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "the document was not read within the request's deadline; try again shortly", nil
	case errors.As(err, &tooMany):
		return http.StatusTooManyRequests, tooMany.Message, nil
	case errors.As(err, &slow):
		return http.StatusRequestTimeout, slow.Error(), nil
	case errors.As(err, &upstream):
		return http.StatusBadGateway, upstream.message, nil
	case errors.As(err, &invalid):
		return http.StatusUnprocessableEntity, invalid.message, details(invalid.findings)
	case errors.As(err, &bad):
		return http.StatusBadRequest, bad.message, nil
	case errors.As(err, &method):
		return http.StatusMethodNotAllowed, method.Error(), nil
	case errors.As(err, &tooLarge):
		return http.StatusRequestEntityTooLarge, "request body is larger than the limit of " + humanize.IBytes(uint64(tooLarge.Limit)), nil
	case errors.Is(err, store.ErrTooLarge):
		return http.StatusRequestEntityTooLarge, err.Error(), nil
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
	case store.IsUnavailable(err), errors.Is(err, context.Canceled):
		return http.StatusServiceUnavailable, unavailableMessage, nil
	}
	return http.StatusInternalServerError, "internal error", nil
}

// unavailableMessage is the answer while the database cannot answer: down, restarting, failing
// over, stalled, or every connection busy.
const unavailableMessage = "the database is unavailable; try again shortly"

// retryAfterUnavailable is the Retry-After of a 503: about what a restart of the embedded
// database or a failover takes.
const retryAfterUnavailable = 2 * time.Second

// retryAfter is the Retry-After of an error response, or 0 for none.
func retryAfter(status int, err error) time.Duration {
	var tooMany *httpx.TooManyRequests
	switch {
	case status == http.StatusServiceUnavailable:
		return retryAfterUnavailable
	case errors.As(err, &tooMany):
		return tooMany.RetryAfter
	}
	return 0
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
		s.logFailure(r, status, err)
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="krm-catalog"`)
		}
		if (status == http.StatusTooManyRequests || status == http.StatusRequestTimeout) && r.ContentLength != 0 {
			// do not read a refused body to keep the connection: a flood of large posts would
			// cost as much to refuse as to serve
			w.Header().Set("Connection", "close")
		}
		if d := retryAfter(status, err); d > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(max(1, (d+time.Second-1)/time.Second))))
		}
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, status, apiError{Error: errorBody{Message: msg, Details: det}})
	}
}

// logFailure logs the failures an operator must see, coalesced: a database outage is one line
// when it starts and one with its count when it ends; clients' mistakes are not logged.
func (s *Server) logFailure(r *http.Request, status int, err error) {
	var stopped *unfinished
	switch {
	case status == http.StatusServiceUnavailable && errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		return // the client left
	case errors.As(err, &stopped):
		s.failures.failed(r.Context(), slog.LevelWarn, "deadline", "documents not read within their deadline: answering 503", slog.Any("error", err))
	case status == http.StatusServiceUnavailable:
		s.failures.failed(r.Context(), slog.LevelWarn, "database unavailable", "database unavailable: answering 503", slog.Any("error", err))
	case status == http.StatusTooManyRequests:
		s.failures.failed(r.Context(), slog.LevelWarn, "rate limited", "requests over a limit: answering 429", slog.String("limit", err.Error()))
	case status >= 500:
		kind := "status " + strconv.Itoa(status) + " " + routeOf(r)
		s.failures.failed(r.Context(), slog.LevelError, kind, "request failed",
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Any("error", err))
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the status is sent; a failed write means the client left
}
