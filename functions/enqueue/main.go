// Command enqueue is the Lambda function behind API Gateway (HTTP API,
// payload format 2.0) that serves Ferry's HTTP API (internal/httpapi).
//
// It reads its configuration from the environment at cold start and refuses
// to start, naming the variable, when a value is missing or invalid:
// FERRY_TABLE, FERRY_PARTITIONS, FERRY_LEASE, FERRY_WRITE_MARGIN, LOG_LEVEL
// (internal/coldstart), FERRY_WORKSPACE_CLAIM (JWT authorizer),
// FERRY_IAM_WORKSPACES (IAM authorizer), FERRY_MAX_BODY, FERRY_MAX_PAYLOAD,
// FERRY_RETENTION and FERRY_ROW_CAP (a cancel ends an action and sets its
// TTL). Metrics go to stdout in the Embedded Metric Format, flushed at the
// end of every invocation.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/coldstart"
	"github.com/ferryhq/ferry/internal/httpapi"
	"github.com/ferryhq/ferry/internal/outbox"
	"github.com/ferryhq/ferry/internal/telemetry"
)

func main() {
	ctx := context.Background()
	h, err := newHandler(ctx, os.Getenv, nil, clock.System{}, os.Stdout)
	if err != nil {
		slog.New(slog.NewJSONHandler(os.Stderr, nil)).Error("enqueue: refusing to start", slog.String("error", err.Error()))
		os.Exit(1)
	}
	lambda.StartWithOptions(h.Invoke, lambda.WithEnableSIGTERM(func() { _ = h.obs.Flush() }))
}

// handler is the function's Lambda handler: the API behind the API Gateway
// v2 adapter, with the metrics of each invocation flushed as it ends.
type handler struct {
	proxy *httpadapter.HandlerAdapterV2
	obs   *telemetry.Observer
}

// Invoke serves one API Gateway HTTP API (payload 2.0) request.
func (h *handler) Invoke(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	resp, err := h.proxy.ProxyWithContext(ctx, req)
	if ferr := h.obs.Flush(); ferr != nil {
		h.obs.Log.Warn("enqueue: metrics flush failed", slog.String("error", ferr.Error()))
	}
	return resp, err
}

// newHandler wires the function: configuration, AWS clients (db, when nil,
// is a DynamoDB client from the default AWS configuration, which honours
// AWS_ENDPOINT_URL_DYNAMODB), the engine with the kinds it validates, the
// authorizer mapping and the API handler, behind the API Gateway v2 adapter.
func newHandler(ctx context.Context, getenv func(string) string, db outbox.DynamoDB, clk clock.Clock, logOut io.Writer) (*handler, error) {
	cfg, err := coldstart.Load(getenv)
	if err != nil {
		return nil, err
	}
	ecfg, err := coldstart.LoadEnqueue(getenv)
	if err != nil {
		return nil, err
	}
	out := telemetry.NewLockedWriter(logOut)
	log := telemetry.NewLogger(out, cfg.LogLevel).With(slog.String("function", "enqueue"))
	telemetry.LogColdStart(log)
	obs := telemetry.NewObserver(coldstart.Metrics(out, clk, "enqueue", getenv), log)
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("error loading the AWS configuration: %w", err)
	}
	if db == nil {
		db = dynamodb.NewFromConfig(awsCfg)
	}
	// The same registry as the drainer's, so every kind the drainer carries
	// out is accepted here; enqueue only calls Validate, so no adapter makes
	// a request.
	reg, err := coldstart.Registry(awsCfg.Copy(), clk, getenv)
	if err != nil {
		return nil, err
	}
	ocfg := cfg.Outbox()
	ocfg.MaxPayload = ecfg.MaxPayload
	// A cancel through the API ends an action, so it sets the TTL the
	// deployment configured.
	if err := coldstart.RetentionConfig(getenv, &ocfg); err != nil {
		return nil, err
	}
	eng, err := outbox.New(db, clk, reg, ocfg, outbox.WithObserver(obs))
	if err != nil {
		return nil, fmt.Errorf("error building the engine: %w", err)
	}
	if err := coldstart.TableCheck(ctx, eng, log); err != nil {
		return nil, err // a table of another layout is refused
	}
	auth := httpapi.Gateway{JWT: &httpapi.JWTClaim{Claim: ecfg.WorkspaceClaim}}
	if ecfg.IAMWorkspaces != nil {
		auth.IAM = &httpapi.IAMPrincipals{Workspaces: ecfg.IAMWorkspaces}
	}
	api, err := httpapi.New(httpapi.Options{
		Outbox: eng, Auth: auth, Clock: clk, Logger: log,
		Limits: httpapi.Limits{MaxBody: ecfg.MaxBody, MaxPayload: ecfg.MaxPayload},
		// /healthz reads the table (at most every 2 s per instance).
		Health: eng.Ping,
		OnEnqueued: func(actions []outbox.Action) {
			for _, a := range actions {
				obs.Metrics.Count(telemetry.MetricActionsEnqueued, 1, telemetry.Dim{Name: "Kind", Value: a.Kind})
			}
		},
	})
	if err != nil {
		return nil, err
	}
	return &handler{proxy: httpadapter.NewV2(api), obs: obs}, nil
}
