// RUN: arch-opt %s -split-input-file -arch-fuse-residual | FileCheck %s
// RUN: arch-opt %s -split-input-file -arch-fuse-residual -arch-pack-weights='min-columns=1' | FileCheck %s --check-prefix=PACKED

arch.weight @wo : tensor<8x16xf32>
arch.weight @bo : tensor<8xf32>
// A residual connection's add of a linear read by nothing else: the add
// becomes the linear's epilogue, its bias kept, the residual on either
// side of the add; the fused linear is placed at the add, after a residual
// made after the linear (%x2). Packing keeps the residual.
// CHECK-LABEL: func.func @fuse
// CHECK-DAG: %[[W:.*]] = arch.param @wo
// CHECK-DAG: %[[B:.*]] = arch.param @bo
// CHECK: %[[Y1:.*]] = arch.linear %arg0, %[[W]], %[[B]] residual %arg1 : (tensor<?x16xf32>, tensor<8x16xf32>, tensor<8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT: %[[X2:.*]] = arch.activation relu %[[Y1]]
// CHECK-NEXT: %[[Y2:.*]] = arch.linear %arg0, %[[W]] residual %[[X2]] : (tensor<?x16xf32>, tensor<8x16xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NOT: arch.add
// CHECK: return %[[Y2]]
// PACKED-LABEL: func.func @fuse
// PACKED: arch.linear %arg0, %{{.*}}, %{{.*}} residual %arg1 : (tensor<?x16xf32>, tensor<1x16x64xf32>, tensor<8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
// PACKED: arch.linear %arg0, %{{.*}} residual %{{.*}} : (tensor<?x16xf32>, tensor<1x16x64xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
func.func @fuse(%a: tensor<?x16xf32>, %x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %wo = arch.param @wo : tensor<8x16xf32>
  %bo = arch.param @bo : tensor<8xf32>
  %o1 = arch.linear %a, %wo, %bo : (tensor<?x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %y1 = arch.add %x, %o1 : tensor<?x8xf32>
  %o2 = arch.linear %a, %wo : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  %x2 = arch.activation relu %y1 : tensor<?x8xf32>
  %y2 = arch.add %o2, %x2 : tensor<?x8xf32>
  return %y2 : tensor<?x8xf32>
}

// -----

arch.weight @wo : tensor<8x16xf32>
arch.weight @wg : tensor<16x16xf32>
// Left as they are: a linear read by something else too, an add of no
// linear, a glu linear (its epilogue is the gating), and a linear that
// has a residual already.
// CHECK-LABEL: func.func @unfused
// CHECK-NOT: residual %arg1
// CHECK-COUNT-4: arch.add
// CHECK-NOT: residual %arg1
// CHECK: return
func.func @unfused(%a: tensor<?x16xf32>, %x: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  %wo = arch.param @wo : tensor<8x16xf32>
  %o = arch.linear %a, %wo : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  %y1 = arch.add %x, %o : tensor<?x8xf32>
  %y2 = arch.add %x, %x : tensor<?x8xf32>
  %wg = arch.param @wg : tensor<16x16xf32>
  %g = arch.linear %a, %wg glu silu : (tensor<?x16xf32>, tensor<16x16xf32>) -> tensor<?x8xf32>
  %y3 = arch.add %x, %g : tensor<?x8xf32>
  %r = arch.linear %a, %wo residual %y2 : (tensor<?x16xf32>, tensor<8x16xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %y4 = arch.add %x, %r : tensor<?x8xf32>
  return %o, %y1, %y2, %y3, %y4 : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

arch.weight @wo : tensor<8x16xf32>
arch.weight @wd : tensor<8x16xf32>
// An add of two linears takes one as the other's residual (the right
// one's epilogue adds the left one's result), once.
// CHECK-LABEL: func.func @two
// CHECK: %[[L:.*]] = arch.linear %arg0, %{{.*}} : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
// CHECK: %[[Y:.*]] = arch.linear %arg1, %{{.*}} residual %[[L]] :
// CHECK-NEXT: return %[[Y]]
func.func @two(%a: tensor<?x16xf32>, %m: tensor<?x16xf32>) -> tensor<?x8xf32> {
  %wo = arch.param @wo : tensor<8x16xf32>
  %o = arch.linear %a, %wo : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  %wd = arch.param @wd : tensor<8x16xf32>
  %d = arch.linear %m, %wd : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  %y = arch.add %o, %d : tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}
