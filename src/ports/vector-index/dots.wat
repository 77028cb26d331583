;; The local vector index's scan: dot products of one probe with many rows, four lanes at a time (Wasm SIMD).
;; Built to dots.wasm by `npm install` (scripts/build-wasm.ts); Workers cannot compile Wasm at run time.
(module
  (memory (export "memory") 1)
  ;; dots(probe, row, count, stride, out): out[r] = Σᵢ probe[i] · rows[r][i] as f32, for r < count; rows packed from
  ;; `row`, `stride` floats apart. Pointers are byte offsets; stride is a multiple of 8, its padding zero.
  (func (export "dots") (param $probe i32) (param $row i32) (param $count i32) (param $stride i32) (param $out i32)
    (local $rowBytes i32) (local $end i32) (local $i i32) (local $a v128) (local $b v128)
    (local.set $rowBytes (i32.shl (local.get $stride) (i32.const 2)))
    (local.set $end (i32.add (local.get $out) (i32.shl (local.get $count) (i32.const 2))))
    (block $done
      (loop $rows
        (br_if $done (i32.ge_u (local.get $out) (local.get $end)))
        (local.set $a (v128.const f32x4 0 0 0 0))
        (local.set $b (v128.const f32x4 0 0 0 0))
        (local.set $i (i32.const 0))
        ;; Two accumulators, eight floats a step: independent additions that the CPU overlaps.
        (block $rowDone
          (loop $lanes
            (br_if $rowDone (i32.ge_u (local.get $i) (local.get $rowBytes)))
            (local.set $a (f32x4.add (local.get $a)
              (f32x4.mul (v128.load (i32.add (local.get $probe) (local.get $i)))
                         (v128.load (i32.add (local.get $row) (local.get $i))))))
            (local.set $b (f32x4.add (local.get $b)
              (f32x4.mul (v128.load offset=16 (i32.add (local.get $probe) (local.get $i)))
                         (v128.load offset=16 (i32.add (local.get $row) (local.get $i))))))
            (local.set $i (i32.add (local.get $i) (i32.const 32)))
            (br $lanes)))
        (local.set $a (f32x4.add (local.get $a) (local.get $b)))
        (f32.store (local.get $out)
          (f32.add
            (f32.add (f32x4.extract_lane 0 (local.get $a)) (f32x4.extract_lane 1 (local.get $a)))
            (f32.add (f32x4.extract_lane 2 (local.get $a)) (f32x4.extract_lane 3 (local.get $a)))))
        (local.set $row (i32.add (local.get $row) (local.get $rowBytes)))
        (local.set $out (i32.add (local.get $out) (i32.const 4)))
        (br $rows)))))
