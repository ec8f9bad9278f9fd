package ddblocal

import (
	"context"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Tags: TagResource, UntagResource, ListTagsOfResource and the Tags of
// CreateTable, with DynamoDB's rules ("Tagging restrictions" in the
// Developer Guide): at most 50 tags a table, keys of 1 to 128 characters and
// values of 0 to 256, of letters, digits, white space and + - = . _ : / @,
// keys not starting with "aws:". A request with one bad tag changes nothing.
// The messages are the ones DynamoDB answers (observed; the API reference
// documents none of them).

const maxTags = 50

const msgTooManyTags = "Number of Tags exceed the current limit for the provided ResourceArn"

// checkTags validates the tags of a TagResource or CreateTable request.
func checkTags(tags []types.Tag) error {
	seen := map[string]bool{}
	for _, tag := range tags {
		if tag.Key == nil {
			return validationError("The Tag Key provided is invalid, Key: null")
		}
		if tag.Value == nil {
			return validationError("The Tag Value provided is invalid, Value: null")
		}
		k, v := *tag.Key, *tag.Value
		if n := utf8.RuneCountInString(k); n < 1 || n > 128 || !tagChars(k) {
			return validationError("The Tag Key provided is invalid, Key: %s", k)
		}
		if utf8.RuneCountInString(v) > 256 || !tagChars(v) {
			return validationError("The Tag Value provided is invalid, Value: %s", v)
		}
		if strings.HasPrefix(k, "aws:") {
			return validationError("Tag Key cannot be prefixed with aws:, Key: %s", k)
		}
		if seen[k] {
			return validationError("Duplicate Tag Keys provided as input: Duplicate Tag Key found %s", k)
		}
		seen[k] = true
	}
	if len(tags) > maxTags {
		return validationError(msgTooManyTags)
	}
	return nil
}

// tagChars reports whether s has only the characters tags may hold: letters
// of any script, digits, white space and + - = . _ : / @.
func tagChars(s string) bool {
	for _, r := range s {
		switch {
		case unicode.IsLetter(r), unicode.IsNumber(r), unicode.IsSpace(r):
		case strings.ContainsRune("+-=._:/@", r):
		default:
			return false
		}
	}
	return true
}

func tagMap(tags []types.Tag) map[string]string {
	if len(tags) == 0 {
		return nil
	}
	m := make(map[string]string, len(tags))
	for _, tag := range tags {
		m[aws.ToString(tag.Key)] = aws.ToString(tag.Value)
	}
	return m
}

// tableByARN returns the table an ARN names: a malformed ARN, or one of an
// index or anything but a table, is a ValidationException; a well-formed
// table ARN of no table is ResourceNotFoundException.
func (db *DB) tableByARN(arn string) (*table, error) {
	if err := checkTableARN(arn); err != nil {
		return nil, err
	}
	for _, t := range db.tables {
		if t.schema.arn == arn {
			return t, nil
		}
	}
	return nil, notFoundError("Requested resource not found: ResourcArn: " + arn + " not found")
}

// checkTableARN checks arn:<partition>:dynamodb:<region>:<account>:table/<name>.
func checkTableARN(arn string) error {
	if !strings.HasPrefix(arn, "arn:") {
		// Observed: "ARNs must start with 'arn:'" (the text around it is
		// not documented).
		return validationError("Invalid TableArn: Invalid ResourceArn provided as input %s: ARNs must start with 'arn:'", arn)
	}
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) == 6 && parts[2] == "dynamodb" {
		if name, ok := strings.CutPrefix(parts[5], "table/"); ok {
			if tableNamePattern.MatchString(name) {
				return nil
			}
			if strings.Contains(name, "/") {
				return validationError("One or more parameter values were invalid: Invalid resource arn provided, only table or stream is accepted. Provided resource arn: %s", arn)
			}
		}
	}
	return validationError("Invalid TableArn: Invalid ResourceArn provided as input %s", arn)
}

// TagResource adds tags to a table (or replaces the values of keys it has).
func (db *DB) TagResource(ctx context.Context, in *dynamodb.TagResourceInput, _ ...func(*dynamodb.Options)) (*dynamodb.TagResourceOutput, error) {
	c, err := db.begin(ctx, "TagResource", "")
	if err != nil {
		return nil, err
	}
	return finish(c, &dynamodb.TagResourceOutput{}, db.tagResource(in))
}

func (db *DB) tagResource(in *dynamodb.TagResourceInput) error {
	if in.Tags == nil {
		return validationError("1 validation error detected: Value null at 'tags' failed to satisfy constraint: Member must not be null")
	}
	if err := checkTableARN(aws.ToString(in.ResourceArn)); err != nil {
		return err
	}
	if len(in.Tags) == 0 {
		return validationError("Atleast one Tag needs to be provided as Input.")
	}
	if err := checkTags(in.Tags); err != nil {
		return err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	defer db.logMeta("TagResource", tableNameOfARN(aws.ToString(in.ResourceArn)), in)
	t, err := db.tableByARN(aws.ToString(in.ResourceArn))
	if err != nil {
		return err
	}
	merged := map[string]string{}
	for k, v := range t.tags {
		merged[k] = v
	}
	for k, v := range tagMap(in.Tags) {
		merged[k] = v
	}
	if len(merged) > maxTags {
		return validationError(msgTooManyTags)
	}
	t.tags = merged
	return nil
}

// UntagResource removes tags from a table; keys it does not have are
// ignored.
func (db *DB) UntagResource(ctx context.Context, in *dynamodb.UntagResourceInput, _ ...func(*dynamodb.Options)) (*dynamodb.UntagResourceOutput, error) {
	c, err := db.begin(ctx, "UntagResource", "")
	if err != nil {
		return nil, err
	}
	return finish(c, &dynamodb.UntagResourceOutput{}, db.untagResource(in))
}

func (db *DB) untagResource(in *dynamodb.UntagResourceInput) error {
	if in.TagKeys == nil {
		return validationError("1 validation error detected: Value null at 'tagKeys' failed to satisfy constraint: Member must not be null")
	}
	if err := checkTableARN(aws.ToString(in.ResourceArn)); err != nil {
		return err
	}
	if len(in.TagKeys) == 0 {
		return validationError("Atleast one Tag Key needs to be provided as Input.")
	}
	for _, k := range in.TagKeys {
		if n := utf8.RuneCountInString(k); n < 1 || n > 128 || !tagChars(k) {
			return validationError("The Tag Key provided is invalid, Key: %s", k)
		}
	}
	if len(in.TagKeys) > maxTags {
		return validationError(msgTooManyTags)
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	defer db.logMeta("UntagResource", tableNameOfARN(aws.ToString(in.ResourceArn)), in)
	t, err := db.tableByARN(aws.ToString(in.ResourceArn))
	if err != nil {
		return err
	}
	for _, k := range in.TagKeys {
		delete(t.tags, k)
	}
	return nil
}

// ListTagsOfResource lists a table's tags, in key order.
func (db *DB) ListTagsOfResource(ctx context.Context, in *dynamodb.ListTagsOfResourceInput, _ ...func(*dynamodb.Options)) (*dynamodb.ListTagsOfResourceOutput, error) {
	c, err := db.begin(ctx, "ListTagsOfResource", "")
	if err != nil {
		return nil, err
	}
	db.mu.RLock()
	defer db.mu.RUnlock()
	t, err := db.tableByARN(aws.ToString(in.ResourceArn))
	if err != nil {
		return finish[dynamodb.ListTagsOfResourceOutput](c, nil, err)
	}
	out := &dynamodb.ListTagsOfResourceOutput{Tags: []types.Tag{}}
	for _, k := range sortedKeys(t.tags) {
		out.Tags = append(out.Tags, types.Tag{Key: aws.String(k), Value: aws.String(t.tags[k])})
	}
	return finish(c, out, nil)
}
