package agents

import (
	"context"

	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/fleet/triton"
)

// imageCache reads each image from IMGAPI once within one activity: a
// fleet's servers run few distinct images.
type imageCache struct {
	imgapi *triton.IMGAPI
	seen   map[uuid.UUID]triton.Image
}

func (a *AgentActivities) newImageCache() *imageCache {
	return &imageCache{imgapi: a.IMGAPI, seen: map[uuid.UUID]triton.Image{}}
}

// get is the image, or the zero Image (no published_at) when IMGAPI does
// not know it or an older agent reported no image.
func (c *imageCache) get(ctx context.Context, id uuid.UUID) (triton.Image, error) {
	if im, ok := c.seen[id]; ok || id == uuid.Nil {
		return im, nil
	}
	im, err := c.imgapi.GetImage(ctx, id)
	if triton.IsNotFound(err) {
		im, err = triton.Image{}, nil
	}
	if err != nil {
		return triton.Image{}, tritonErr(err, "get image "+id.String())
	}
	c.seen[id] = im
	return im, nil
}
