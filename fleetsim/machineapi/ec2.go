package machineapi

import (
	"encoding/xml"
	"net/http"
	"sort"
	"strings"
)

// fleetsim's EC2 answers DescribeImages by image ID (the EC2 Query API as
// aws-sdk-go-v2 speaks it: a form POST, an XML reply) for the AMIs of
// every cluster: the releases' AMIs are owned by Red Hat's RHCOS account
// and a MachineSet's custom AMI by a customer account, which is what the
// MCO reads to tell them apart (machine-config-operator
// pkg/controller/bootimage/aws_helpers.go, detectAMIKind). Signatures are
// not checked.

// Owner accounts fleetsim's AMIs carry.
const (
	ec2OwnerRHCOS    = "531415883065"
	ec2OwnerCustomer = "111122223333"
)

type ec2Image struct {
	ImageID string `xml:"imageId"`
	OwnerID string `xml:"imageOwnerId"`
	Name    string `xml:"name"`
	State   string `xml:"imageState"`
}

type ec2DescribeImagesResponse struct {
	XMLName   xml.Name   `xml:"DescribeImagesResponse"`
	Xmlns     string     `xml:"xmlns,attr"`
	RequestID string     `xml:"requestId"`
	Images    []ec2Image `xml:"imagesSet>item"`
}

type ec2ErrorResponse struct {
	XMLName   xml.Name `xml:"Response"`
	Code      string   `xml:"Errors>Error>Code"`
	Message   string   `xml:"Errors>Error>Message"`
	RequestID string   `xml:"RequestID"`
}

func (s *Sim) serveEC2(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		ec2Error(w, http.StatusBadRequest, "MalformedQueryString", err.Error())
		return
	}
	if a := r.PostForm.Get("Action"); a != "DescribeImages" {
		ec2Error(w, http.StatusBadRequest, "InvalidAction", "The action "+a+" is not valid for this web service.")
		return
	}
	var ids []string
	for k, v := range r.PostForm {
		if strings.HasPrefix(k, "ImageId.") && len(v) > 0 {
			ids = append(ids, v[0])
		}
	}
	sort.Strings(ids)
	images := s.ec2Images()
	resp := ec2DescribeImagesResponse{Xmlns: "http://ec2.amazonaws.com/doc/2016-11-15/", RequestID: "fleetsim"}
	for _, id := range ids {
		img, ok := images[id]
		if !ok {
			ec2Error(w, http.StatusBadRequest, "InvalidAMIID.NotFound", "The image id '["+id+"]' does not exist")
			return
		}
		resp.Images = append(resp.Images, img)
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	_, _ = w.Write([]byte(xml.Header))
	_ = xml.NewEncoder(w).Encode(resp)
}

// ec2Images is every AMI fleetsim knows, by ID.
func (s *Sim) ec2Images() map[string]ec2Image {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]ec2Image{}
	for _, c := range s.clusters {
		for _, b := range c.spec.BootImages {
			for _, img := range b.Images {
				for _, ami := range img.AWS {
					out[ami] = ec2Image{ImageID: ami, OwnerID: ec2OwnerRHCOS, Name: "rhcos-" + b.OSVersion, State: "available"}
				}
			}
		}
	}
	for _, c := range s.clusters {
		for _, m := range c.spec.MachineSets {
			if m.CustomImage != "" && strings.HasPrefix(m.CustomImage, "ami-") {
				if _, official := out[m.CustomImage]; !official {
					out[m.CustomImage] = ec2Image{ImageID: m.CustomImage, OwnerID: ec2OwnerCustomer, Name: "custom-" + m.Name, State: "available"}
				}
			}
		}
	}
	return out
}

func ec2Error(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(xml.Header))
	_ = xml.NewEncoder(w).Encode(ec2ErrorResponse{Code: code, Message: msg, RequestID: "fleetsim"})
}
