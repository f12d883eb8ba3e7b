FROM --platform=linux/x86_64 exec.env.x86_64.9ffb8c24a256fc00173fa1:latest

COPY ./setup_repo.sh /root/
RUN /bin/bash /root/setup_repo.sh

WORKDIR /testbed/
