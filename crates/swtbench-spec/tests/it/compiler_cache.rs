//! `--compiler-cache`: the env image installs ccache (and so has another key), the instance
//! build gets the cache volume of its env image and the variables its steps use, and nothing of
//! the instance's own scripts changes.

use serde_json::json;
use swtbench_core::{Instance, PatchLayout};
use swtbench_spec::compiler_cache::{
    volume_name, CACHE_DIR, CCACHE_BIN_DIR, ENV_LABEL, KIND_LABEL, VOLUME_KIND,
};
use swtbench_spec::{Arch, ExecSpec, Provider, ReadError, SpecTable};

fn instance(id: &str, repo: &str, version: &str) -> Instance {
    let row = json!({
        "instance_id": id, "repo": repo, "version": version,
        "base_commit": "b0b0", "environment_setup_commit": "e0e0",
        "patch": "", "test_patch": "",
    });
    Instance::from_row(&row, PatchLayout::Swebench).unwrap()
}

fn no_files(_: &str, _: &str, p: &str) -> Result<Option<String>, ReadError> {
    Err(format!("no file should be read, asked for {p}").into())
}

fn render(table: &SpecTable, id: &str, repo: &str, version: &str) -> ExecSpec {
    ExecSpec::new(&instance(id, repo, version), table, Arch::X86_64, &no_files).unwrap()
}

#[test]
fn the_flag_installs_ccache_in_the_env_image_and_gives_the_instance_build_its_volume() {
    let uv = SpecTable::embedded()
        .with_env_provider(Provider::Uv, None)
        .0;
    for (id, repo, version) in [
        (
            "matplotlib__matplotlib-23913",
            "matplotlib/matplotlib",
            "3.6",
        ),
        ("astropy__astropy-13977", "astropy/astropy", "5.1"),
    ] {
        let off = render(&uv, id, repo, version);
        let on = render(&uv.clone().with_compiler_cache(true), id, repo, version);
        assert!(
            off.compiler_cache.is_none(),
            "{id}: no cache without the flag"
        );
        assert!(!off.env_dockerfile.contains("ccache"), "{id}");
        // The env image has ccache, so its key is another one.
        assert!(
            on.env_dockerfile.starts_with(&off.env_dockerfile),
            "{id}: lines appended"
        );
        let added = &on.env_dockerfile[off.env_dockerfile.len()..];
        assert!(
            added.contains("apt-get install -y --no-install-recommends ccache"),
            "{id}: {added}"
        );
        assert_ne!(on.keys.env, off.keys.env, "{id}");
        // What builds and runs the instance is the same text.
        assert_eq!(on.setup_env_sh, off.setup_env_sh, "{id}");
        assert_eq!(on.setup_repo_sh, off.setup_repo_sh, "{id}");
        assert_eq!(
            on.instance_dockerfile,
            off.instance_dockerfile.replace(&off.keys.env, &on.keys.env),
            "{id}"
        );
        // exec.eval.<arch>.<env hash>.<setup_repo.sh hash>:latest
        let instance_part = |key: &str| key.rsplit('.').next().map(str::to_string);
        assert_eq!(
            instance_part(&on.keys.instance),
            instance_part(&off.keys.instance),
            "{id}: the instance hash is setup_repo.sh's"
        );
        // The cache: one volume per env image, labelled so clean-up finds it.
        let cache = on.compiler_cache.expect("a cache with the flag");
        assert_eq!(cache.volume, volume_name(&on.keys.env));
        assert!(
            cache.volume.starts_with("swtbench-ccache-x86_64."),
            "{}",
            cache.volume
        );
        assert!(!cache.volume.contains(':'), "{}", cache.volume);
        assert!(cache
            .labels
            .contains(&(KIND_LABEL.to_string(), VOLUME_KIND.to_string())));
        assert!(cache
            .labels
            .contains(&(ENV_LABEL.to_string(), on.keys.env.clone())));
        assert_eq!(cache.target, CACHE_DIR);
        assert!(cache
            .env
            .contains(&("CCACHE_DIR".to_string(), CACHE_DIR.to_string())));
        assert!(cache.env.iter().any(|(k, _)| k == "CCACHE_MAXSIZE"));
        assert_eq!(cache.path_prepend, vec![CCACHE_BIN_DIR.to_string()]);
    }
}

#[test]
fn instances_of_one_env_share_a_volume_and_other_envs_do_not() {
    let on = SpecTable::embedded()
        .with_env_provider(Provider::Uv, None)
        .0
        .with_compiler_cache(true);
    let volume = |id, repo, version| {
        render(&on, id, repo, version)
            .compiler_cache
            .expect("a cache")
            .volume
    };
    let a = volume(
        "matplotlib__matplotlib-23913",
        "matplotlib/matplotlib",
        "3.6",
    );
    let b = volume(
        "matplotlib__matplotlib-23964",
        "matplotlib/matplotlib",
        "3.6",
    );
    let c = volume(
        "matplotlib__matplotlib-25287",
        "matplotlib/matplotlib",
        "3.7",
    );
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn reference_conda_entries_change_key_too() {
    let conda = SpecTable::embedded().clone();
    let off = render(&conda, "astropy__astropy-13977", "astropy/astropy", "5.1");
    let on = render(
        &conda.clone().with_compiler_cache(true),
        "astropy__astropy-13977",
        "astropy/astropy",
        "5.1",
    );
    assert_ne!(on.keys.env, off.keys.env);
    assert!(on.env_dockerfile.contains("ccache"));
}
