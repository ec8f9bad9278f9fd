package outbox

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// SubjectWorkspacesResult lists the workspaces holding a subject.
type SubjectWorkspacesResult struct {
	Workspaces []string // sorted; "" for instance-level actions
	// Examined counts the subject index entries read.
	Examined int
}

// SubjectWorkspaces finds the workspaces that hold actions or idempotency
// records of a subject, for an erasure "in every workspace". A subject is
// named within a workspace (the subject index is keyed by both), so this
// scans the subject index (keys only, about 100 bytes an entry): its cost
// grows with the rows that carry a subject, not with the table.
func (e *Engine) SubjectWorkspaces(ctx context.Context, subjectID string) (*SubjectWorkspacesResult, error) {
	if subjectID == "" {
		return nil, &ValidationError{Field: "subject_id", Message: "subject_id is required"}
	}
	found := map[string]bool{}
	res := &SubjectWorkspacesResult{}
	var start map[string]types.AttributeValue
	for {
		s, err := e.db.Scan(ctx, &dynamodb.ScanInput{
			TableName: e.table(), IndexName: aws.String(IndexSubject),
			FilterExpression:          aws.String("contains(#spk, :s)"),
			ExpressionAttributeNames:  map[string]string{"#spk": attrSubPK},
			ExpressionAttributeValues: map[string]types.AttributeValue{":s": avS("#" + subjectID)},
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return nil, fmt.Errorf("error scanning the subject index: %w", err)
		}
		res.Examined += int(s.ScannedCount)
		for _, it := range s.Items {
			// A workspace holds no '#', so the key splits at its first one.
			if ws, subj, ok := strings.Cut(getS(it, attrSubPK), "#"); ok && subj == subjectID {
				found[ws] = true
			}
		}
		if s.LastEvaluatedKey == nil {
			break
		}
		start = s.LastEvaluatedKey
	}
	for ws := range found {
		res.Workspaces = append(res.Workspaces, ws)
	}
	slices.Sort(res.Workspaces)
	return res, nil
}
