// Command enqueue is the Lambda function behind API Gateway (HTTP API,
// payload format 2.0) that serves Ferry's HTTP API (internal/httpapi).
//
// It reads its configuration from the environment at cold start and refuses
// to start, naming the variable, when a value is missing or invalid:
// FERRY_TABLE, FERRY_PARTITIONS, FERRY_LEASE, FERRY_WRITE_MARGIN, LOG_LEVEL
// (internal/fnconfig), FERRY_WORKSPACE_CLAIM (JWT authorizer),
// FERRY_IAM_WORKSPACES (IAM authorizer), FERRY_MAX_BODY, FERRY_MAX_PAYLOAD.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/fnconfig"
	"github.com/ferryhq/ferry/internal/fnruntime"
	"github.com/ferryhq/ferry/internal/httpapi"
	"github.com/ferryhq/ferry/internal/outbox"
)

func main() {
	ctx := context.Background()
	h, err := newHandler(ctx, os.Getenv, nil, clock.System{}, os.Stdout)
	if err != nil {
		slog.New(slog.NewJSONHandler(os.Stderr, nil)).Error("enqueue: refusing to start", slog.String("error", err.Error()))
		os.Exit(1)
	}
	lambda.Start(h.ProxyWithContext)
}

// newHandler wires the function: configuration, AWS clients (db, when nil,
// is a DynamoDB client from the default AWS configuration, which honours
// AWS_ENDPOINT_URL_DYNAMODB), the engine with the kinds it validates, the
// authorizer mapping and the API handler, behind the API Gateway v2 adapter.
func newHandler(ctx context.Context, getenv func(string) string, db outbox.DynamoDB, clk clock.Clock, logOut io.Writer) (*httpadapter.HandlerAdapterV2, error) {
	cfg, err := fnconfig.Load(getenv)
	if err != nil {
		return nil, err
	}
	ecfg, err := fnconfig.LoadEnqueue(getenv)
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewJSONHandler(logOut, &slog.HandlerOptions{Level: cfg.LogLevel}))
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
	reg, err := fnruntime.Registry(awsCfg.Copy(), clk, getenv)
	if err != nil {
		return nil, err
	}
	ocfg := cfg.Outbox()
	ocfg.MaxPayload = ecfg.MaxPayload
	eng, err := outbox.New(db, clk, reg, ocfg)
	if err != nil {
		return nil, fmt.Errorf("error building the engine: %w", err)
	}
	auth := httpapi.Gateway{JWT: &httpapi.JWTClaim{Claim: ecfg.WorkspaceClaim}}
	if ecfg.IAMWorkspaces != nil {
		auth.IAM = &httpapi.IAMPrincipals{Workspaces: ecfg.IAMWorkspaces}
	}
	api, err := httpapi.New(httpapi.Options{
		Outbox: eng, Auth: auth, Clock: clk, Logger: log,
		Limits: httpapi.Limits{MaxBody: ecfg.MaxBody, MaxPayload: ecfg.MaxPayload},
	})
	if err != nil {
		return nil, err
	}
	return httpadapter.NewV2(api), nil
}
