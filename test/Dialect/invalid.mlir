// RUN: arch-opt %s -split-input-file -verify-diagnostics

// weight_dynamic
// expected-error @+1 {{weight must have a static shape}}
arch.weight @w : tensor<?x8xf32>

// -----

func.func @linear_k_mismatch(%x: tensor<?x8xf32>, %w: tensor<4x6xf32>) {
  // expected-error @+1 {{weight has K = 6 but the input has 8 features}}
  %y = arch.linear %x, %w : (tensor<?x8xf32>, tensor<4x6xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @linear_n_mismatch(%x: tensor<?x8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{result has 5 features but the weight has N = 4}}
  %y = arch.linear %x, %w : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x5xf32>
  return
}

// -----

func.func @linear_bias(%x: tensor<?x8xf32>, %w: tensor<4x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{bias must be tensor<4xf32>}}
  %y = arch.linear %x, %w, %b : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @linear_dynamic_features(%x: tensor<?x?xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{input must be a rank-2 tensor with a static feature dimension}}
  %y = arch.linear %x, %w : (tensor<?x?xf32>, tensor<4x8xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @norm_weight(%x: tensor<?x8xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{weight must be tensor<8xf32>}}
  %y = arch.norm rms %x, %w {eps = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<4xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @norm_eps(%x: tensor<?x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{eps must be positive}}
  %y = arch.norm rms %x, %w {eps = 0.0 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @norm_kind(%x: tensor<?x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [rms, layer]}}
  %y = arch.norm batch %x, %w {eps = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @rope_heads(%x: tensor<?x8xf32>, %p: index) {
  // expected-error @+1 {{n_heads (3) * head_dim (4) must equal the input width 8}}
  %y = arch.rope interleaved %x, %p {n_heads = 3, head_dim = 4, rotary_dim = 4, theta = 1.0e4} : (tensor<?x8xf32>, index) -> tensor<?x8xf32>
  return
}

// -----

func.func @rope_odd(%x: tensor<?x8xf32>, %p: index) {
  // expected-error @+1 {{rotary_dim must be even and in (0, head_dim], got 3}}
  %y = arch.rope interleaved %x, %p {n_heads = 2, head_dim = 4, rotary_dim = 3, theta = 1.0e4} : (tensor<?x8xf32>, index) -> tensor<?x8xf32>
  return
}

// -----

func.func @rope_longrope(%x: tensor<?x8xf32>, %p: index) {
  // expected-error @+1 {{has 1 factors for 2 rotated pairs}}
  %y = arch.rope interleaved scaling longrope %x, %p {n_heads = 2, head_dim = 4, rotary_dim = 4, theta = 1.0e4, original_max_seq_len = 16, factors = array<f64: 2.0>} : (tensor<?x8xf32>, index) -> tensor<?x8xf32>
  return
}

// -----

func.func @rope_longrope_none(%x: tensor<?x8xf32>, %p: index) {
  // expected-error @+1 {{takes factors with longrope scaling and only then}}
  %y = arch.rope interleaved scaling longrope %x, %p {n_heads = 2, head_dim = 4, rotary_dim = 4, theta = 1.0e4, original_max_seq_len = 16} : (tensor<?x8xf32>, index) -> tensor<?x8xf32>
  return
}

// -----

func.func @rope_factors_none(%x: tensor<?x8xf32>, %p: index) {
  // expected-error @+1 {{takes factors with longrope scaling and only then}}
  %y = arch.rope interleaved %x, %p {n_heads = 2, head_dim = 4, rotary_dim = 4, theta = 1.0e4, factors = array<f64: 2.0, 3.0>} : (tensor<?x8xf32>, index) -> tensor<?x8xf32>
  return
}

// -----

func.func @rope_attention_none(%x: tensor<?x8xf32>, %p: index) {
  // expected-error @+1 {{attention_factor must be positive and finite, and 1 but with longrope}}
  %y = arch.rope interleaved %x, %p {n_heads = 2, head_dim = 4, rotary_dim = 4, theta = 1.0e4, attention_factor = 2.0} : (tensor<?x8xf32>, index) -> tensor<?x8xf32>
  return
}

// -----

// An epilogue's input may be wider than its heads, but not narrower.
func.func @rope_epilogue_narrow(%x: tensor<?x8xf32>, %w: tensor<8x8xf32>, %p: index) {
  %l = arch.linear %x, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  // expected-error @+1 {{n_heads (3) * head_dim (4) must equal the input width 8 or be less}}
  %y = arch.rope interleaved epilogue %l, %p {n_heads = 3, head_dim = 4, rotary_dim = 4, theta = 1.0e4} : (tensor<?x8xf32>, index) -> tensor<?x8xf32>
  return
}

// -----

// Whole heads: its linear's kernel writes the result by heads.
func.func @rope_epilogue_partial(%x: tensor<?x8xf32>, %w: tensor<10x8xf32>, %p: index) {
  %l = arch.linear %x, %w : (tensor<?x8xf32>, tensor<10x8xf32>) -> tensor<?x10xf32>
  // expected-error @+1 {{epilogue needs an input width (10) of whole heads of 4}}
  %y = arch.rope interleaved epilogue %l, %p {n_heads = 2, head_dim = 4, rotary_dim = 4, theta = 1.0e4} : (tensor<?x10xf32>, index) -> tensor<?x10xf32>
  return
}

// -----

// An epilogue's input is a linear's, read by it alone.
func.func @rope_epilogue_input(%x: tensor<?x8xf32>, %p: index) {
  // expected-error @+1 {{epilogue needs an input that an arch.linear without glu or residual makes for it alone}}
  %y = arch.rope interleaved epilogue %x, %p {n_heads = 1, head_dim = 4, rotary_dim = 4, theta = 1.0e4} : (tensor<?x8xf32>, index) -> tensor<?x8xf32>
  return
}

// -----

func.func @rope_epilogue_shared(%x: tensor<?x8xf32>, %w: tensor<8x8xf32>, %p: index) -> tensor<?x8xf32> {
  %l = arch.linear %x, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  // expected-error @+1 {{epilogue needs an input that an arch.linear without glu or residual makes for it alone}}
  %y = arch.rope interleaved epilogue %l, %p {n_heads = 2, head_dim = 4, rotary_dim = 4, theta = 1.0e4} : (tensor<?x8xf32>, index) -> tensor<?x8xf32>
  return %l : tensor<?x8xf32>
}

// -----

func.func @rope_epilogue_residual(%x: tensor<?x8xf32>, %w: tensor<8x8xf32>, %p: index) {
  %l = arch.linear %x, %w residual %x : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  // expected-error @+1 {{epilogue needs an input that an arch.linear without glu or residual makes for it alone}}
  %y = arch.rope interleaved epilogue %l, %p {n_heads = 2, head_dim = 4, rotary_dim = 4, theta = 1.0e4} : (tensor<?x8xf32>, index) -> tensor<?x8xf32>
  return
}

// -----

func.func @rope_longrope_attention(%x: tensor<?x8xf32>, %p: index) {
  // expected-error @+1 {{attention_factor must be positive and finite}}
  %y = arch.rope interleaved scaling longrope %x, %p {n_heads = 2, head_dim = 4, rotary_dim = 4, theta = 1.0e4, original_max_seq_len = 16, factors = array<f64: 2.0, 3.0>, attention_factor = -1.0} : (tensor<?x8xf32>, index) -> tensor<?x8xf32>
  return
}

// -----

func.func @attention_groups(%q: tensor<?x12xf32>, %k: tensor<?x8xf32>, %p: index) {
  // expected-error @+1 {{n_heads (3) must be a multiple of n_kv_heads (2)}}
  %y = arch.attention %q, %k, %k, %p {n_heads = 3, n_kv_heads = 2, head_dim = 4, scale = 0.5} : (tensor<?x12xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index) -> tensor<?x12xf32>
  return
}

// -----

func.func @attention_kv_width(%q: tensor<?x8xf32>, %k: tensor<?x8xf32>, %p: index) {
  // expected-error @+1 {{key and value widths must be n_kv_heads * head_dim (4) and n_kv_heads * v_head_dim (4), got 8 and 8}}
  %y = arch.attention %q, %k, %k, %p {n_heads = 2, n_kv_heads = 1, head_dim = 4, scale = 0.5} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index) -> tensor<?x8xf32>
  return
}

// -----

func.func @glu_types(%a: tensor<?x8xf32>, %b: tensor<?x4xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %y = "arch.glu"(%a, %b) {activation = 0 : i32} : (tensor<?x8xf32>, tensor<?x4xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @last_token(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{expects [T, N] -> [1, N]}}
  %y = arch.last_token %x : tensor<?x8xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @last_position(%x: tensor<8xf32>, %p: index) {
  // expected-error @+1 {{expects token rows [T, N]}}
  %y = arch.last_position %x, %p : tensor<8xf32>
  return
}

// -----

// (A pick keeps the element type: a router's i32 choices stay i32.)
func.func @last_token_type(%e: tensor<?x2xi32>) {
  // expected-error @+1 {{expects [T, N] -> [1, N]}}
  %y = arch.last_token %e : tensor<?x2xi32> -> tensor<1x2xf32>
  return
}

// -----

func.func @embed_width(%t: tensor<?xi32>, %e: tensor<16x8xf32>) {
  // expected-error @+1 {{result width 4 does not match the table's d_model 8}}
  %y = arch.embed %t, %e : (tensor<?xi32>, tensor<16x8xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @pos_embed_no_table(%x: tensor<?x8xf32>, %p: index) {
  // expected-error @+1 {{learned positions need a table}}
  %y = arch.pos_embed learned %x, %p : (tensor<?x8xf32>, index) -> tensor<?x8xf32>
  return
}

// -----

func.func @pos_embed_table_width(%x: tensor<?x8xf32>, %p: index, %t: tensor<16x4xf32>) {
  // expected-error @+1 {{table must be a static [positions, 8] tensor with more than offset rows}}
  %y = arch.pos_embed learned %x, %p, %t : (tensor<?x8xf32>, index, tensor<16x4xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @pos_embed_sinusoidal_table(%x: tensor<?x8xf32>, %p: index, %t: tensor<16x8xf32>) {
  // expected-error @+1 {{sinusoidal positions take no table}}
  %y = arch.pos_embed sinusoidal %x, %p, %t : (tensor<?x8xf32>, index, tensor<16x8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @norm_bias(%x: tensor<?x8xf32>, %w: tensor<8xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{bias must have the weight's type 'tensor<8xf32>'}}
  %y = arch.norm layer %x, %w, %b {eps = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>, tensor<4xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @activation_kind(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'activation'}}
  %y = arch.activation swish %x : tensor<?x8xf32>
  return
}

// -----

func.func @softcap_cap(%x: tensor<1x8xf32>) {
  // expected-error @+1 {{cap must be positive}}
  %y = arch.softcap %x {cap = 0.0 : f32} : tensor<1x8xf32>
  return
}

// -----

func.func @norm_groups(%x: tensor<?x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{groups (3) must divide the input width 8}}
  %y = arch.norm rms %x, %w {eps = 1.0e-5 : f32, groups = 3} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @norm_group_weight(%x: tensor<?x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{weight must be tensor<4xf32>}}
  %y = arch.norm rms %x, %w {eps = 1.0e-5 : f32, groups = 2} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @t5_table(%q: tensor<?x8xf32>, %p: index, %t: tensor<32x3xf32>) {
  // expected-error @+1 {{rel_bias must be a static [buckets, 2] tensor}}
  %y = arch.attention %q, %q, %q, %p bias %t {n_heads = 2, n_kv_heads = 2, head_dim = 4, scale = 1.0} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index, tensor<32x3xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @attention_window(%q: tensor<?x8xf32>, %p: index) {
  // expected-error @+1 {{window must be non-negative}}
  %y = arch.attention %q, %q, %q, %p {n_heads = 2, n_kv_heads = 2, head_dim = 4, scale = 1.0, window = -3} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index) -> tensor<?x8xf32>
  return
}

// -----

func.func @shaw_rows(%q: tensor<?x8xf32>, %p: index, %t: tensor<4x4xf32>) {
  // expected-error @+1 {{Shaw tables must be tensor<5x4xf32> (2 shaw_clip + 1 rows)}}
  %y = arch.attention %q, %q, %q, %p shaw %t, %t {n_heads = 2, n_kv_heads = 2, head_dim = 4, scale = 1.0, shaw_clip = 2} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<?x8xf32>
  return
}

// -----

// weight_layout_without_source
// expected-error @+1 {{has a source layout but no source tensor}}
arch.weight @w {transpose} : tensor<4x4xf32>

// -----

// weight_source_rank
// expected-error @+1 {{source tensor has rank 1, the weight 2}}
arch.weight @w from "t" [16] : tensor<4x4xf32>

// -----

// weight_transpose_rank1
// expected-error @+1 {{only a rank-2 source can be transposed}}
arch.weight @w from "t" [4] transposed : tensor<4xf32>

// -----

// weight_source_columns
// expected-error @+1 {{source dimension 1 is 12, the weight's 4}}
arch.weight @w from "t" [4, 12] rows [1, 4, 0, 4] : tensor<4x4xf32>

// -----

// weight_source_rows
// expected-error @+1 {{source has 8 rows, the weight 4}}
arch.weight @w from "t" [8, 4] : tensor<4x4xf32>

// -----

// weight_rows_arity
// expected-error @+1 {{rows must be [groups, stride, offset, length]}}
arch.weight @w from "t" [12, 4] rows [1, 12, 4] : tensor<4x4xf32>

// -----

// weight_rows_outside_group
// expected-error @+1 {{rows [2, 6, 4, 4] do not select a block within each group}}
arch.weight @w from "t" [12, 4] rows [2, 6, 4, 4] : tensor<8x4xf32>

// -----

// weight_rows_count
// expected-error @+1 {{rows of 2 groups of 6 take 4 of 12 source rows, the weight has 6}}
arch.weight @w from "t" [12, 4] rows [2, 6, 0, 2] : tensor<6x4xf32>

// -----

func.func @param_undeclared() {
  // expected-error @+1 {{names @w, which is not an arch.weight}}
  %w = arch.param @w : tensor<4xf32>
  return
}

// -----

arch.weight @w : tensor<4xf32>
func.func @param_type_mismatch() {
  // expected-error @+1 {{has type 'tensor<8xf32>' but weight @w is 'tensor<4xf32>'}}
  %w = arch.param @w : tensor<8xf32>
  return
}

// -----

// expected-error @+1 {{a prepared weight has no checkpoint source}}
arch.weight @w from "t" [4] prepared : tensor<4xf32>

// -----

arch.weight @w : tensor<4xf32>
func.func @assign_loaded(%v: tensor<4xf32>) {
  // expected-error @+1 {{assigns @w, a weight loaded from the checkpoint}}
  arch.assign @w = %v : tensor<4xf32>
  return
}

// -----

func.func @weight_in_function() {
  // expected-error @+1 {{expects parent op 'builtin.module'}}
  arch.weight @w : tensor<4xf32>
  return
}

// -----

func.func @concat_mismatch(%a: tensor<4x8xf32>, %b: tensor<2x6xf32>) {
  // expected-error @+1 {{input 'tensor<2x6xf32>' differs from the result 'tensor<6x8xf32>' outside dim 0}}
  %c = arch.concat %a, %b {dim = 0 : i64} : (tensor<4x8xf32>, tensor<2x6xf32>) -> tensor<6x8xf32>
  return
}

// -----

func.func @concat_sum(%a: tensor<4x8xf32>, %b: tensor<2x8xf32>) {
  // expected-error @+1 {{inputs add up to 6 along dim 0, the result has 7}}
  %c = arch.concat %a, %b {dim = 0 : i64} : (tensor<4x8xf32>, tensor<2x8xf32>) -> tensor<7x8xf32>
  return
}

// -----

func.func @concat_dim(%a: tensor<4xf32>) {
  // expected-error @+1 {{dim 1 is outside the rank 1}}
  %c = arch.concat %a {dim = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @split_cover(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{results cover 6 columns, the input has 8}}
  %a, %b = arch.split %x : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x2xf32>
  return
}

// -----

func.func @split_tokens(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{results must have the input's token dimension}}
  %a, %b = arch.split %x : tensor<?x8xf32> -> tensor<1x4xf32>, tensor<?x4xf32>
  return
}

// -----

func.func @pack_shape(%w: tensor<96x8xf32>) {
  // expected-error @+1 {{result must be tensor<2x8x64x(f32|f16|bf16)>, got 'tensor<1x8x64xf32>'}}
  %p = arch.pack %w {panel = 64 : i64} : tensor<96x8xf32> -> tensor<1x8x64xf32>
  return
}

// -----

func.func @linear_packed_panels(%x: tensor<?x8xf32>, %w: tensor<1x8x64xf32>) {
  // expected-error @+1 {{a packed weight for 96 features has 2 panels of 64, got 'tensor<1x8x64xf32>'}}
  %y = arch.linear %x, %w : (tensor<?x8xf32>, tensor<1x8x64xf32>) -> tensor<?x96xf32>
  return
}

// -----

// A glu epilogue's weight holds two halves: 2 x 96 rows, or 2 x 2 panels
// (each half packed alone), and it takes no bias.
func.func @linear_glu_rows(%x: tensor<?x8xf32>, %w: tensor<96x8xf32>) {
  // expected-error @+1 {{result has 96 features (glu: two halves) but the weight has N = 96}}
  %y = arch.linear %x, %w glu silu : (tensor<?x8xf32>, tensor<96x8xf32>) -> tensor<?x96xf32>
  return
}

// -----

func.func @linear_glu_panels(%x: tensor<?x8xf32>, %w: tensor<3x8x64xf32>) {
  // expected-error @+1 {{a packed weight for 96 features (glu: two halves) has 4 panels of 64, got 'tensor<3x8x64xf32>'}}
  %y = arch.linear %x, %w glu silu : (tensor<?x8xf32>, tensor<3x8x64xf32>) -> tensor<?x96xf32>
  return
}

// -----

func.func @linear_glu_bias(%x: tensor<?x8xf32>, %w: tensor<32x8xf32>, %b: tensor<16xf32>) {
  // expected-error @+1 {{a glu epilogue takes no bias}}
  %y = arch.linear %x, %w, %b glu silu : (tensor<?x8xf32>, tensor<32x8xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @linear_glu_residual(%x: tensor<?x8xf32>, %w: tensor<32x8xf32>, %r: tensor<?x16xf32>) {
  // expected-error @+1 {{a glu epilogue takes no residual}}
  %y = arch.linear %x, %w residual %r glu silu : (tensor<?x8xf32>, tensor<32x8xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @linear_residual_type(%x: tensor<?x8xf32>, %w: tensor<16x8xf32>, %r: tensor<1x16xf32>) {
  // expected-error @+1 {{residual must have the result's type 'tensor<?x16xf32>', got 'tensor<1x16xf32>'}}
  %y = arch.linear %x, %w residual %r : (tensor<?x8xf32>, tensor<16x8xf32>, tensor<1x16xf32>) -> tensor<?x16xf32>
  return
}

// -----
// cache_element
// expected-error @+1 {{stores f32, f16 or bf16, not 'i32'}}
arch.cache @c tokens 8 : tensor<4xi32>

// -----
// cache_capacity
// expected-error @+1 {{a ring cache needs a capacity in [1, 2147483647]}}
arch.cache @c ring 0 : tensor<4xf32>

// -----
// cache_tokens_capacity
// expected-error @+1 {{a tokens cache needs a capacity in [1, 2147483647]}}
arch.cache @c tokens : tensor<4xf32>

// -----
// cache_state_capacity
// expected-error @+1 {{a state cache has no capacity: it holds one row}}
arch.cache @c state 8 : tensor<4xf32>

// -----
// cache_dynamic
// expected-error @+1 {{attribute 'row' failed to satisfy constraint}}
arch.cache @c tokens 8 : tensor<?xf32>

// -----
// cache_append_unknown
func.func @f(%k: tensor<?x4xf32>, %p: index) {
  // expected-error @+1 {{names @nope, which is not an arch.cache}}
  %c = arch.cache_append @nope, %k at %p : tensor<?x4xf32> -> tensor<?x4xf32>
  return
}

// -----
// cache_append_state
arch.cache @s state : tensor<4xf32>
func.func @f(%k: tensor<?x4xf32>, %p: index) {
  // expected-error @+1 {{appends to @s, a state cache (it holds no positions)}}
  %c = arch.cache_append @s, %k at %p : tensor<?x4xf32> -> tensor<?x4xf32>
  return
}

// -----
// cache_append_width
arch.cache @c tokens 8 : tensor<2x4xf32>
func.func @f(%k: tensor<?x4xf32>, %p: index) {
  // expected-error @+1 {{rows are 4 wide but a row of @c 'tensor<2x4xf32>' holds 8}}
  %c = arch.cache_append @c, %k at %p : tensor<?x4xf32> -> tensor<?x4xf32>
  return
}

// -----
// cache_append_context
arch.cache @c tokens 8 : tensor<4xf32>
func.func @f(%k: tensor<?x4xf32>, %p: index) {
  // expected-error @+1 {{context must be [positions, 4], got 'tensor<?x8xf32>'}}
  %c = arch.cache_append @c, %k at %p : tensor<?x4xf32> -> tensor<?x8xf32>
  return
}

// -----
// cache_row_size
// expected-error @+1 {{row 'tensor<65536x65536xf32>' must hold 1 to 2147483647 elements}}
arch.cache @c tokens 8 : tensor<65536x65536xf32>

// -----
// cache_capacity_size
// expected-error @+1 {{a tokens cache needs a capacity in [1, 2147483647]}}
arch.cache @c tokens 4294967312 : tensor<4xf32>

// -----
// cache_append_unranked
arch.cache @c tokens 8 : tensor<4xf32>
func.func @f(%k: tensor<*xf32>, %p: index) {
  // expected-error @+1 {{operand #0 must be 2D tensor of 32-bit float values}}
  %c = "arch.cache_append"(%k, %p) <{cache = @c}> : (tensor<*xf32>, index) -> tensor<?x4xf32>
  return
}

// -----
// unranked_activation (the custom form does not even parse one)
func.func @f(%x: tensor<*xf32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float values}}
  %y = "arch.activation"(%x) <{activation = 0 : i32}> : (tensor<*xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @shaw_clip_without_tables(%q: tensor<?x8xf32>, %p: index) {
  // expected-error @+1 {{shaw_clip must be positive with Shaw tables and 0 without, got 2}}
  %y = arch.attention %q, %q, %q, %p {n_heads = 2, n_kv_heads = 2, head_dim = 4, scale = 1.0, shaw_clip = 2} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index) -> tensor<?x8xf32>
  return
}

// -----

func.func @shaw_tables_without_clip(%q: tensor<?x8xf32>, %p: index, %t: tensor<1x4xf32>) {
  // expected-error @+1 {{shaw_clip must be positive with Shaw tables and 0 without, got 0}}
  %y = arch.attention %q, %q, %q, %p shaw %t, %t {n_heads = 2, n_kv_heads = 2, head_dim = 4, scale = 1.0} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index, tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @flash_blocks(%q: tensor<?x8xf32>, %k: tensor<?x4xf32>, %p: index) {
  // expected-error @+1 {{block_q, block_kv and split_kv must be in [1, 65536], got 0, 64 and 256}}
  %y = arch.flash_attention %q, %k, %k, %p {n_heads = 2, n_kv_heads = 1, head_dim = 4, scale = 0.5, block_q = 0, block_kv = 64, split_kv = 256} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, index) -> tensor<?x8xf32>
  return
}

// -----

func.func @flash_checked_as_attention(%q: tensor<?x8xf32>, %k: tensor<?x8xf32>, %p: index) {
  // expected-error @+1 {{key and value widths must be n_kv_heads * head_dim (4) and n_kv_heads * v_head_dim (4), got 8 and 8}}
  %y = arch.flash_attention %q, %k, %k, %p {n_heads = 2, n_kv_heads = 1, head_dim = 4, scale = 0.5, block_q = 16, block_kv = 64, split_kv = 256} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index) -> tensor<?x8xf32>
  return
}

// -----

func.func @flash_missing_blocks(%q: tensor<?x8xf32>, %k: tensor<?x4xf32>, %p: index) {
  // expected-error @+1 {{requires attribute 'block_kv'}}
  %y = arch.flash_attention %q, %k, %k, %p {n_heads = 2, n_kv_heads = 1, head_dim = 4, scale = 0.5, block_q = 16} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, index) -> tensor<?x8xf32>
  return
}

// -----

func.func @flash_block_too_big(%q: tensor<?x8xf32>, %k: tensor<?x4xf32>, %p: index) {
  // expected-error @+1 {{block_q, block_kv and split_kv must be in [1, 65536], got 16, 64 and 100000}}
  %y = arch.flash_attention %q, %k, %k, %p {n_heads = 2, n_kv_heads = 1, head_dim = 4, scale = 0.5, block_q = 16, block_kv = 64, split_kv = 100000} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, index) -> tensor<?x8xf32>
  return
}

// -----

// Mixture of experts: arch.route, arch.moe, arch.pack with groups.
func.func @route_topk(%l: tensor<?x4xf32>) {
  // expected-error @+1 {{top_k = 5 must be in [1, 4] (the router scores 4 experts)}}
  %e, %w = arch.route softmax %l {top_k = 5 : i64, normalize = true, n_group = 1 : i64, topk_group = 1 : i64, scaling = 1.0 : f32} : (tensor<?x4xf32>) -> (tensor<?x5xi32>, tensor<?x5xf32>)
  return
}

// -----

func.func @route_groups(%l: tensor<?x6xf32>) {
  // expected-error @+1 {{n_group = 4 must divide the 6 experts}}
  %e, %w = arch.route softmax %l {top_k = 2 : i64, normalize = true, n_group = 4 : i64, topk_group = 1 : i64, scaling = 1.0 : f32} : (tensor<?x6xf32>) -> (tensor<?x2xi32>, tensor<?x2xf32>)
  return
}

// -----

func.func @route_kept(%l: tensor<?x8xf32>) {
  // expected-error @+1 {{topk_group = 3 must be in [1, 2]}}
  %e, %w = arch.route softmax %l {top_k = 2 : i64, normalize = true, n_group = 2 : i64, topk_group = 3 : i64, scaling = 1.0 : f32} : (tensor<?x8xf32>) -> (tensor<?x2xi32>, tensor<?x2xf32>)
  return
}

// -----

func.func @route_few(%l: tensor<?x8xf32>) {
  // expected-error @+1 {{top_k = 5 exceeds the 4 experts of the groups kept}}
  %e, %w = arch.route softmax %l {top_k = 5 : i64, normalize = true, n_group = 4 : i64, topk_group = 2 : i64, scaling = 1.0 : f32} : (tensor<?x8xf32>) -> (tensor<?x5xi32>, tensor<?x5xf32>)
  return
}

// -----

func.func @route_sigmoid_groups(%l: tensor<?x4xf32>) {
  // expected-error @+1 {{sigmoid group scores sum a group's best two experts: groups of at least 2}}
  %e, %w = arch.route sigmoid %l {top_k = 2 : i64, normalize = true, n_group = 4 : i64, topk_group = 2 : i64, scaling = 1.0 : f32} : (tensor<?x4xf32>) -> (tensor<?x2xi32>, tensor<?x2xf32>)
  return
}

// -----

func.func @route_bias(%l: tensor<?x4xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{bias must be tensor<4xf32>, got 'tensor<8xf32>'}}
  %e, %w = arch.route sigmoid %l bias %b {top_k = 2 : i64, normalize = true, n_group = 1 : i64, topk_group = 1 : i64, scaling = 1.0 : f32} : (tensor<?x4xf32>, tensor<8xf32>) -> (tensor<?x2xi32>, tensor<?x2xf32>)
  return
}

// -----

func.func @route_scaling(%l: tensor<?x4xf32>) {
  // expected-error @+1 {{scaling must be positive}}
  %e, %w = arch.route softmax %l {top_k = 2 : i64, normalize = true, n_group = 1 : i64, topk_group = 1 : i64, scaling = 0.0 : f32} : (tensor<?x4xf32>) -> (tensor<?x2xi32>, tensor<?x2xf32>)
  return
}

// -----

func.func @route_results(%l: tensor<?x4xf32>) {
  // expected-error @+1 {{results must be [tokens, top_k] = [?, 2], got 'tensor<?x3xi32>'}}
  %e, %w = arch.route softmax %l {top_k = 2 : i64, normalize = true, n_group = 1 : i64, topk_group = 1 : i64, scaling = 1.0 : f32} : (tensor<?x4xf32>) -> (tensor<?x3xi32>, tensor<?x2xf32>)
  return
}

// -----

func.func @moe_topk(%x: tensor<?x8xf32>, %e: tensor<?x5xi32>, %w: tensor<?x5xf32>, %u: tensor<64x8xf32>, %d: tensor<32x16xf32>) {
  // expected-error @+1 {{top_k = 5 exceeds n_experts = 4}}
  %y = arch.moe silu %x, %e, %w up %u down %d {n_experts = 4 : i64, d_ff = 16 : i64} : (tensor<?x8xf32>, tensor<?x5xi32>, tensor<?x5xf32>, tensor<64x8xf32>, tensor<32x16xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @moe_routes(%x: tensor<?x8xf32>, %e: tensor<?x2xi32>, %w: tensor<?x3xf32>, %u: tensor<64x8xf32>, %d: tensor<32x16xf32>) {
  // expected-error @+1 {{experts and weights must be [tokens, top_k] alike}}
  %y = arch.moe silu %x, %e, %w up %u down %d {n_experts = 4 : i64, d_ff = 16 : i64} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x3xf32>, tensor<64x8xf32>, tensor<32x16xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @moe_up(%x: tensor<?x8xf32>, %e: tensor<?x2xi32>, %w: tensor<?x2xf32>, %u: tensor<48x8xf32>, %d: tensor<32x16xf32>) {
  // expected-error @+1 {{up must be tensor<64x8xf32> (4 experts of [16, 8]) or packed by expert, got 'tensor<48x8xf32>'}}
  %y = arch.moe silu %x, %e, %w up %u down %d {n_experts = 4 : i64, d_ff = 16 : i64} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<48x8xf32>, tensor<32x16xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @moe_packed_down(%x: tensor<?x8xf32>, %e: tensor<?x2xi32>, %w: tensor<?x2xf32>, %g: tensor<64x8xf32>, %u: tensor<64x8xf32>, %d: tensor<2x16x64xf32>) {
  // expected-error @+1 {{down must be tensor<32x16xf32> (4 experts of [8, 16]) or packed by expert, got 'tensor<2x16x64xf32>'}}
  %y = arch.moe silu %x, %e, %w gate %g up %u down %d {n_experts = 4 : i64, d_ff = 16 : i64} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<64x8xf32>, tensor<64x8xf32>, tensor<2x16x64xf32>) -> tensor<?x8xf32>
  return
}

// -----

// 16-bit weights (--weight-type) are prepared, and packed.
// expected-error @+1 {{a loaded weight is f32 (16-bit weights are prepared from it), got 'tensor<8x8xbf16>'}}
arch.weight @w16 : tensor<8x8xbf16>

// -----

func.func @linear_16bit_unpacked(%x: tensor<?x8xf32>, %w: tensor<8x8xbf16>) {
  // expected-error @+1 {{a 16-bit weight must be packed, got 'tensor<8x8xbf16>'}}
  %y = arch.linear %x, %w : (tensor<?x8xf32>, tensor<8x8xbf16>) -> tensor<?x8xf32>
  return
}

// -----

func.func @moe_16bit_unpacked(%x: tensor<?x8xf32>, %e: tensor<?x2xi32>, %w: tensor<?x2xf32>, %u: tensor<64x8xf16>, %d: tensor<32x16xf32>) {
  // expected-error @+1 {{up: a 16-bit weight must be packed, got 'tensor<64x8xf16>'}}
  %y = arch.moe silu %x, %e, %w up %u down %d {n_experts = 4 : i64, d_ff = 16 : i64} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<64x8xf16>, tensor<32x16xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @pack_f8(%w: tensor<96x8xf32>) {
  // expected-error @+1 {{result #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %p = arch.pack %w {panel = 64 : i64} : tensor<96x8xf32> -> tensor<2x8x64xf8E4M3FN>
  return
}

// -----

func.func @pack_groups(%w: tensor<96x8xf32>) {
  // expected-error @+1 {{groups (5) must divide N = 96}}
  %p = arch.pack %w {panel = 64 : i64, groups = 5 : i64} : tensor<96x8xf32> -> tensor<5x8x64xf32>
  return
}

// -----

func.func @pack_groups_shape(%w: tensor<96x8xf32>) {
  // expected-error @+1 {{result must be tensor<4x8x64x(f32|f16|bf16)>, got 'tensor<2x8x64xf32>'}}
  %p = arch.pack %w {panel = 64 : i64, groups = 4 : i64} : tensor<96x8xf32> -> tensor<2x8x64xf32>
  return
}

// -----

// Several weights: a group each, of one shape.
func.func @pack_parts_groups(%a: tensor<96x8xf32>, %b: tensor<96x8xf32>) {
  // expected-error @+1 {{2 weights must be 2 groups, got 1}}
  %p = arch.pack %a, %b {panel = 64 : i64} : tensor<96x8xf32>, tensor<96x8xf32> -> tensor<4x8x64xf32>
  return
}

// -----

func.func @pack_parts_shape(%a: tensor<96x8xf32>, %b: tensor<64x8xf32>) {
  // expected-error @+1 {{weights must share one type, got 'tensor<96x8xf32>' and 'tensor<64x8xf32>'}}
  %p = arch.pack %a, %b {panel = 64 : i64, groups = 2 : i64} : tensor<96x8xf32>, tensor<64x8xf32> -> tensor<4x8x64xf32>
  return
}

// -----

// A glu linear's weight packed as one group straddles its halves.
func.func @linear_glu_groups(%x: tensor<?x8xf32>, %w: tensor<128x8xf32>) {
  %p = arch.pack %w {panel = 64 : i64} : tensor<128x8xf32> -> tensor<2x8x64xf32>
  // expected-error @+1 {{a packed weight for 2 half(s) must be packed in 2 group(s), got 1}}
  %y = arch.linear %x, %p glu silu : (tensor<?x8xf32>, tensor<2x8x64xf32>) -> tensor<?x64xf32>
  return
}

// -----

// bf16 pairs ([panels, K / 2, panel, 2]) of an even K, bf16 only.

func.func @pack_pairs_f16(%w: tensor<96x8xf32>) {
  // expected-error @+1 {{result in pairs must be tensor<2x4x64x2xbf16> (an even K), got 'tensor<2x4x64x2xf16>'}}
  %p = arch.pack %w {panel = 64 : i64} : tensor<96x8xf32> -> tensor<2x4x64x2xf16>
  return
}

// -----

func.func @pack_pairs_shape(%w: tensor<96x8xf32>) {
  // expected-error @+1 {{result in pairs must be tensor<2x4x64x2xbf16> (an even K), got 'tensor<2x8x64x2xbf16>'}}
  %p = arch.pack %w {panel = 64 : i64} : tensor<96x8xf32> -> tensor<2x8x64x2xbf16>
  return
}

// -----

func.func @linear_pairs_k(%x: tensor<?x6xf32>, %w: tensor<2x4x64x2xbf16>) {
  // expected-error @+1 {{weight has K = 8 but the input has 6 features}}
  %y = arch.linear %x, %w : (tensor<?x6xf32>, tensor<2x4x64x2xbf16>) -> tensor<?x96xf32>
  return
}

// -----

func.func @linear_pairs_not_pairs(%x: tensor<?x8xf32>, %w: tensor<2x4x64x4xbf16>) {
  // expected-error @+1 {{weight must be a static [N, K] tensor or packed [panels, K, panel] (or bf16 [panels, K / 2, panel, 2]), got 'tensor<2x4x64x4xbf16>'}}
  %y = arch.linear %x, %w : (tensor<?x8xf32>, tensor<2x4x64x4xbf16>) -> tensor<?x96xf32>
  return
}

// -----

func.func @heads_split_heads(%x: tensor<?x10xf32>) {
  // expected-error @+1 {{input width 10 is not a positive multiple of 4 heads}}
  %a, %b = arch.heads_split %x {heads = 4 : i64} : tensor<?x10xf32> -> tensor<?x8xf32>, tensor<?x2xf32>
  return
}

// -----

func.func @heads_split_cover(%x: tensor<?x48xf32>) {
  // expected-error @+1 {{results cover 10 columns of each head, the input's heads have 12}}
  %a, %b = arch.heads_split %x {heads = 4 : i64} : tensor<?x48xf32> -> tensor<?x32xf32>, tensor<?x8xf32>
  return
}

// -----

func.func @heads_concat_heads(%a: tensor<?x32xf32>, %b: tensor<?x8xf32>) {
  // expected-error @+1 {{an input has 4 heads or one (shared), got 2}}
  %c = arch.heads_concat %a, %b {heads = 4 : i64, input_heads = array<i64: 4, 2>} : (tensor<?x32xf32>, tensor<?x8xf32>) -> tensor<?x48xf32>
  return
}

// -----

func.func @heads_concat_width(%a: tensor<?x32xf32>, %b: tensor<?x4xf32>) {
  // expected-error @+1 {{result width 40 != heads * the inputs' head widths (4 x 12)}}
  %c = arch.heads_concat %a, %b {heads = 4 : i64, input_heads = array<i64: 4, 1>} : (tensor<?x32xf32>, tensor<?x4xf32>) -> tensor<?x40xf32>
  return
}

// -----

func.func @heads_concat_list(%a: tensor<?x32xf32>, %b: tensor<?x4xf32>) {
  // expected-error @+1 {{needs inputs and one input_heads entry each}}
  %c = arch.heads_concat %a, %b {heads = 4 : i64, input_heads = array<i64: 4>} : (tensor<?x32xf32>, tensor<?x4xf32>) -> tensor<?x48xf32>
  return
}

// -----

func.func @head_linear_weight(%x: tensor<?x32xf32>, %w: tensor<16x32xf32>) {
  // expected-error @+1 {{weight must be tensor<32x16xf32> (4 heads of [K, N], K = 8, N = 16), got 'tensor<16x32xf32>'}}
  %y = arch.head_linear %x, %w {heads = 4 : i64, k_major} : (tensor<?x32xf32>, tensor<16x32xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @head_linear_nk(%x: tensor<?x64xf32>, %w: tensor<24x8xf32>) {
  // expected-error @+1 {{weight must be tensor<24x16xf32> (4 heads of [N, K], K = 16, N = 6), got 'tensor<24x8xf32>'}}
  %y = arch.head_linear %x, %w {heads = 4 : i64} : (tensor<?x64xf32>, tensor<24x8xf32>) -> tensor<?x24xf32>
  return
}

// -----

func.func @attention_value_heads(%q: tensor<?x80xf32>, %k: tensor<?x20xf32>, %v: tensor<?x20xf32>, %p: index) {
  // expected-error @+1 {{key and value widths must be n_kv_heads * head_dim (20) and n_kv_heads * v_head_dim (16), got 20 and 20}}
  %y = arch.attention %q, %k, %v, %p {n_heads = 4, n_kv_heads = 1, head_dim = 20, v_head_dim = 16, scale = 0.5} : (tensor<?x80xf32>, tensor<?x20xf32>, tensor<?x20xf32>, index) -> tensor<?x64xf32>
  return
}

// -----

func.func @attention_value_result(%q: tensor<?x80xf32>, %k: tensor<?x20xf32>, %v: tensor<?x16xf32>, %p: index) {
  // expected-error @+1 {{result must be the query's rows of n_heads * v_head_dim (64) columns}}
  %y = arch.attention %q, %k, %v, %p {n_heads = 4, n_kv_heads = 1, head_dim = 20, v_head_dim = 16, scale = 0.5} : (tensor<?x80xf32>, tensor<?x20xf32>, tensor<?x16xf32>, index) -> tensor<?x80xf32>
  return
}

// -----

func.func @differential_maps(%a: tensor<?x64xf32>, %b: tensor<?x32xf32>, %l: tensor<8xf32>) {
  // expected-error @+1 {{both maps and the result must have one type, got 'tensor<?x64xf32>', 'tensor<?x32xf32>' -> 'tensor<?x64xf32>'}}
  %d = arch.differential %a, %b, %l, %l, %l, %l {lambda_init = 0.2 : f64} : (tensor<?x64xf32>, tensor<?x32xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @differential_lambdas(%a: tensor<?x64xf32>, %l: tensor<8xf32>, %m: tensor<4xf32>) {
  // expected-error @+1 {{the four lambda vectors must have one type, got 'tensor<8xf32>' and 'tensor<4xf32>'}}
  %d = arch.differential %a, %a, %l, %l, %m, %l {lambda_init = 0.2 : f64} : (tensor<?x64xf32>, tensor<?x64xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @differential_rank(%a: tensor<?x4x16xf32>, %l: tensor<8xf32>) {
  // expected-error @+1 {{maps must be [tokens, width], got 'tensor<?x4x16xf32>'}}
  %d = arch.differential %a, %a, %l, %l, %l, %l {lambda_init = 0.2 : f64} : (tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x4x16xf32>
  return
}

// -----

func.func @differential_lambda_shape(%a: tensor<?x64xf32>, %l: tensor<2x4xf32>) {
  // expected-error @+1 {{lambda vectors must be 1-D and static, got 'tensor<2x4xf32>'}}
  %d = arch.differential %a, %a, %l, %l, %l, %l {lambda_init = 0.2 : f64} : (tensor<?x64xf32>, tensor<?x64xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @attention_dilation(%q: tensor<?x16xf32>, %k: tensor<?x16xf32>, %p: index) {
  // expected-error @+1 {{dilation must be 1, or more with a window; got 2 with window 0}}
  %a = arch.attention %q, %k, %k, %p {n_heads = 1, n_kv_heads = 1, head_dim = 16, scale = 0.25, dilation = 2} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, index) -> tensor<?x16xf32>
  return
}

// -----

func.func @attention_span(%q: tensor<?x16xf32>, %k: tensor<?x16xf32>, %p: index) {
  // expected-error @+1 {{window * dilation must be at most 2^24}}
  %a = arch.attention %q, %k, %k, %p {n_heads = 1, n_kv_heads = 1, head_dim = 16, scale = 0.25, window = 16777216, dilation = 2} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, index) -> tensor<?x16xf32>
  return
}

// -----

func.func @attention_globals_window(%q: tensor<?x16xf32>, %k: tensor<?x16xf32>, %p: index) {
  // expected-error @+1 {{global_tokens widen a window: a list of 1 to 64 positions with a window}}
  %a = arch.attention %q, %k, %k, %p {n_heads = 1, n_kv_heads = 1, head_dim = 16, scale = 0.25, global_tokens = array<i64: 0>} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, index) -> tensor<?x16xf32>
  return
}

// -----

func.func @attention_globals_order(%q: tensor<?x16xf32>, %k: tensor<?x16xf32>, %p: index) {
  // expected-error @+1 {{global_tokens must be increasing positions in [0, 2^24)}}
  %a = arch.flash_attention %q, %k, %k, %p {n_heads = 1, n_kv_heads = 1, head_dim = 16, scale = 0.25, window = 4, global_tokens = array<i64: 3, 1>, block_q = 16, block_kv = 16, split_kv = 16} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, index) -> tensor<?x16xf32>
  return
}

// -----

func.func @attention_random(%q: tensor<?x16xf32>, %k: tensor<?x16xf32>, %p: index) {
  // expected-error @+1 {{random_blocks must be in [0, 16], and when positive come with a window and a block_size in [1, 2^24] (0 otherwise); random_seed a 32-bit value}}
  %a = arch.attention %q, %k, %k, %p {n_heads = 1, n_kv_heads = 1, head_dim = 16, scale = 0.25, window = 4, random_blocks = 2} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, index) -> tensor<?x16xf32>
  return
}

// -----

arch.cache @kv tokens 16 : tensor<2x8xf32>
func.func @linear_attention_not_state(%q: tensor<?x32xf32>, %k: tensor<?x16xf32>) {
  // expected-error @+1 {{keeps its state in @kv, a tokens cache: it needs a state cache}}
  %a = arch.linear_attention elu1 @kv, %q, %k, %k {n_heads = 4, n_kv_heads = 2, head_dim = 8, normalize, scale = 0.25 : f64} : (tensor<?x32xf32>, tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x32xf32>
  return
}

// -----

func.func @linear_attention_no_cache(%q: tensor<?x32xf32>, %k: tensor<?x16xf32>) {
  // expected-error @+1 {{names @nothing, which is not an arch.cache}}
  %a = arch.linear_attention relu @nothing, %q, %k, %k {n_heads = 4, n_kv_heads = 2, head_dim = 8, scale = 0.25 : f64} : (tensor<?x32xf32>, tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x32xf32>
  return
}

// -----

arch.cache @state state : tensor<2x8x8xf32>
func.func @linear_attention_state_shape(%q: tensor<?x32xf32>, %k: tensor<?x16xf32>) {
  // expected-error @+1 {{needs a state of 'tensor<2x8x9xf32>' (n_kv_heads, head_dim, v_head_dim + 1 for the normalizer), but @state is 'tensor<2x8x8xf32>'}}
  %a = arch.linear_attention elu1 @state, %q, %k, %k {n_heads = 4, n_kv_heads = 2, head_dim = 8, normalize, scale = 0.25 : f64} : (tensor<?x32xf32>, tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x32xf32>
  return
}

// -----

arch.cache @state state : tensor<2x8x9xf32>
func.func @linear_attention_widths(%q: tensor<?x32xf32>, %k: tensor<?x24xf32>) {
  // expected-error @+1 {{query, key and value widths must be n_heads * head_dim (32), n_kv_heads * head_dim (16) and n_kv_heads * v_head_dim (16), got 32, 24 and 24}}
  %a = arch.linear_attention elu1 @state, %q, %k, %k {n_heads = 4, n_kv_heads = 2, head_dim = 8, normalize, scale = 0.25 : f64} : (tensor<?x32xf32>, tensor<?x24xf32>, tensor<?x24xf32>) -> tensor<?x32xf32>
  return
}

// -----

arch.cache @state state : tensor<2x8x9xf32>
func.func @linear_attention_groups(%q: tensor<?x24xf32>, %k: tensor<?x16xf32>) {
  // expected-error @+1 {{n_heads (3) must be a multiple of n_kv_heads (2)}}
  %a = arch.linear_attention elu1 @state, %q, %k, %k {n_heads = 3, n_kv_heads = 2, head_dim = 8, normalize, scale = 0.25 : f64} : (tensor<?x24xf32>, tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x24xf32>
  return
}

// -----

arch.cache @state state : tensor<2x8x9xf32>
func.func @linear_attention_chunk(%q: tensor<?x32xf32>, %k: tensor<?x16xf32>) {
  // expected-error @+1 {{chunk must be in [0, 65536], got -1}}
  %a = arch.linear_attention elu1 @state, %q, %k, %k {n_heads = 4, n_kv_heads = 2, head_dim = 8, normalize, scale = 0.25 : f64, chunk = -1} : (tensor<?x32xf32>, tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x32xf32>
  return
}

// -----

arch.cache @state state : tensor<2x8x9xf32>
func.func @linear_attention_scale(%q: tensor<?x32xf32>, %k: tensor<?x16xf32>) {
  // expected-error @+1 {{scale must be positive and finite}}
  %a = arch.linear_attention elu1 @state, %q, %k, %k {n_heads = 4, n_kv_heads = 2, head_dim = 8, normalize, scale = 0.0 : f64} : (tensor<?x32xf32>, tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x32xf32>
  return
}

// -----

arch.cache @state state : tensor<2x8x9xf32>
func.func @linear_attention_result(%q: tensor<?x32xf32>, %k: tensor<?x16xf32>) {
  // expected-error @+1 {{result must be the query's rows of n_heads * v_head_dim (32) columns}}
  %a = arch.linear_attention elu1 @state, %q, %k, %k {n_heads = 4, n_kv_heads = 2, head_dim = 8, normalize, scale = 0.25 : f64} : (tensor<?x32xf32>, tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @flash_bf16_dot_odd_head(%q: tensor<?x6xf32>, %k: tensor<?x3xf32>, %p: index) {
  // expected-error @+1 {{bf16_dot needs an even head_dim and block_kv and no Shaw relative positions}}
  %y = arch.flash_attention %q, %k, %k, %p {n_heads = 2, n_kv_heads = 1, head_dim = 3, scale = 0.5, block_q = 16, block_kv = 64, split_kv = 256, bf16_dot} : (tensor<?x6xf32>, tensor<?x3xf32>, tensor<?x3xf32>, index) -> tensor<?x6xf32>
  return
}

// -----

func.func @flash_bf16_dot_odd_block(%q: tensor<?x8xf32>, %k: tensor<?x4xf32>, %p: index) {
  // expected-error @+1 {{bf16_dot needs an even head_dim and block_kv and no Shaw relative positions}}
  %y = arch.flash_attention %q, %k, %k, %p {n_heads = 2, n_kv_heads = 1, head_dim = 4, scale = 0.5, block_q = 16, block_kv = 63, split_kv = 256, bf16_dot} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, index) -> tensor<?x8xf32>
  return
}

// -----

func.func @flash_bf16_dot_shaw(%q: tensor<?x8xf32>, %p: index, %t: tensor<5x4xf32>) {
  // expected-error @+1 {{bf16_dot needs an even head_dim and block_kv and no Shaw relative positions}}
  %y = arch.flash_attention %q, %q, %q, %p shaw %t, %t {n_heads = 2, n_kv_heads = 2, head_dim = 4, scale = 0.5, shaw_clip = 2, block_q = 16, block_kv = 64, split_kv = 256, bf16_dot} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index, tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<?x8xf32>
  return
}
