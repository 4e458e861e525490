# shellcheck shell=bash
# make_image, sourced by setup.sh and tensorflow-image.sh (needs CACHE set: its temp dirs go there).
#
# make_image ROOTFS NAME:TAG OUT.tar ENTRYPOINT_JSON CMD_JSON [BASE.tar]
# Writes a `docker save`-format archive, which `ctr images import` reads: ROOTFS as one
# uncompressed layer, on top of the layers of BASE.tar (an archive this function wrote) if given,
# so an image built on another one holds only what it adds.
make_image() {
  local rootfs=$1 ref=$2 out=$3 entrypoint=$4 cmd=$5 base=${6:-} tmp diff config_digest layer
  local layers=() diff_ids=()
  tmp=$(mktemp -d "$CACHE/image.XXXXXX")
  if [ -n "$base" ]; then
    for layer in $(tar -xOf "$base" manifest.json | python3 -c \
        'import json, sys; print("\n".join(json.load(sys.stdin)[0]["Layers"]))'); do
      tar -C "$tmp" -xf "$base" "$layer"
      layers+=("\"$layer\"")
      diff_ids+=("\"sha256:$(sha256sum "$tmp/$layer" | cut -d' ' -f1)\"")
    done
  fi
  tar --numeric-owner --xattrs -C "$rootfs" -cf "$tmp/layer.tar" .
  diff=$(sha256sum "$tmp/layer.tar" | cut -d' ' -f1)
  mkdir -p "$tmp/$diff" && mv "$tmp/layer.tar" "$tmp/$diff/layer.tar"
  layers+=("\"$diff/layer.tar\"")
  diff_ids+=("\"sha256:$diff\"")
  cat >"$tmp/config.json" <<JSON
{"architecture":"amd64","os":"linux","config":{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"Entrypoint":$entrypoint,"Cmd":$cmd,"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":[$(IFS=,; echo "${diff_ids[*]}")]},"history":[{"created_by":"tf-spawner tools/one-node"}]}
JSON
  config_digest=$(sha256sum "$tmp/config.json" | cut -d' ' -f1)
  mv "$tmp/config.json" "$tmp/$config_digest.json"
  printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":[%s]}]\n' "$config_digest" "$ref" \
    "$(IFS=,; echo "${layers[*]}")" >"$tmp/manifest.json"
  (cd "$tmp" && tar -cf "$out.tmp" manifest.json "$config_digest.json" */layer.tar)
  mv "$out.tmp" "$out"
  rm -rf "$tmp"
}
