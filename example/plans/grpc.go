package main

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// modelService is plans.Model, whose Complete answers a prompt (a
// google.protobuf.StringValue) with a StringValue: a service described
// by hand, so that the example needs no generated code.
var modelService = grpc.ServiceDesc{
	ServiceName: "plans.Model",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{MethodName: "Complete", Handler: func(_ any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
		in := new(wrapperspb.StringValue)
		if err := dec(in); err != nil {
			return nil, err
		}
		h := func(ctx context.Context, req any) (any, error) {
			return wrapperspb.String(complete(ctx, req.(*wrapperspb.StringValue).GetValue())), nil
		}
		if ic == nil {
			return h(ctx, in)
		}
		return ic(ctx, in, &grpc.UnaryServerInfo{FullMethod: "/plans.Model/Complete"}, h)
	}}},
}
